import { Counter, Gauge, Registry } from "prom-client";
import type { LogRow } from "../store/request-log/contract.ts";
import { nanoToUsd } from "../core/money.ts";
import type { CalibrationView } from "../ledger/calibration.ts";
import { TalliedHistogram } from "./tallied-histogram.ts";
import { routeName } from "./route-name.ts";

/** What the metrics read at scrape time rather than count as they go. */
export interface MetricsSources {
  holds(): { count: number; nano: number };
  /** The published endpoint a path belongs to (`/v1/models/{id}`), or null: labels stay a bounded set. */
  endpoint(path: string): string | null;
  routes(): { route: string; state: "healthy" | "failing" | "open" }[];
  /** The byte estimator's window per model (ledger/calibration.ts). */
  calibration(): CalibrationView[];
}

const ROUTE_STATE = { healthy: 0, failing: 1, open: 2 } as const;
/** A route's series labels, made from its key: one function for every row, not a closure per row. */
const routeLabels = (route: string) => ({ route });
const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/**
 * GET /metrics in the Prometheus text format (prom-client), on a registry of its own so that several
 * gateways can live in one process (tests). Request counts, tokens and cost come from the request log
 * row each request ends with; holds and breaker states are read when scraped.
 */
export class Metrics {
  readonly registry = new Registry();
  // The per-request counters are plain numbers, handed to prom-client when scraped (tallied below),
  // each list in first-counted order; a row finds its cells through byModel.
  private readonly requestCells: Cell[] = [];
  private readonly tokenCells: Cell[] = [];
  private readonly costCells: Cell[] = [];
  private readonly byModel = new Map<string, ModelCells>();
  // Registered in this order, as before: the scrape lists the families in it.
  private readonly requests = tallied(this.registry, this.requestCells, { name: "gateway_requests_total", help: "Requests on /v1 by endpoint path, model and status.", labelNames: ["path", "model", "status"] });
  private readonly upstreamLatency = new TalliedHistogram(this.registry, "gateway_upstream_latency_seconds", "Time from sending a request upstream to its response headers, by route.", SECONDS);
  private readonly ttfb = new TalliedHistogram(this.registry, "gateway_upstream_ttfb_seconds", "Time from sending a streamed request upstream to its first event, by route.", SECONDS);
  private readonly tokens = tallied(this.registry, this.tokenCells, { name: "gateway_tokens_total", help: "Tokens billed, by model and kind (input, output, cache_read, cache_write).", labelNames: ["model", "kind"] });
  private readonly cost = tallied(this.registry, this.costCells, { name: "gateway_cost_usd_total", help: "Cost of answered requests in USD, by model (the exact figures are in the ledger).", labelNames: ["model"] });
  private readonly rateLimited = new Counter({ name: "gateway_rate_limit_refusals_total", help: "Requests refused with 429 rate_limit, by endpoint path.", labelNames: ["path"], registers: [this.registry] });
  private readonly batch = new TalliedHistogram(this.registry, "gateway_group_commit_batch_size", "Writes committed together by one group commit.", [1, 2, 4, 8, 16, 32, 64, 128]);
  private readonly batchSeries = this.batch.child("", () => ({}));

  constructor(private readonly sources: MetricsSources) {
    const registers = [this.registry];
    new Gauge({ name: "gateway_holds_open", help: "Holds of running requests.", registers, collect() { this.set(sources.holds().count); } });
    new Gauge({ name: "gateway_holds_usd", help: "Money held by running requests, in USD.", registers, collect() { this.set(nanoToUsd(sources.holds().nano)); } });
    new Gauge({
      name: "gateway_route_state",
      help: "Circuit breaker per upstream route: 0 healthy, 1 failing, 2 open.",
      labelNames: ["route"],
      registers,
      collect() {
        this.reset();
        for (const r of sources.routes()) this.set({ route: r.route }, ROUTE_STATE[r.state]);
      },
    });
    this.estimatorGauges(sources);
  }

  /** The calibration per model: one gauge per figure, a series only where the figure exists. */
  private estimatorGauges(sources: MetricsSources): void {
    const figures: [name: string, help: string, read: (v: CalibrationView) => number | null][] = [
      ["gateway_estimator_samples", "Settled requests in the byte estimator's calibration window, by model.", (v) => v.samples],
      ["gateway_estimator_bytes_per_token", "Median request body bytes per upstream input token over the window, by model (count_tokens' divisor).", (v) => v.medianBytesPerToken],
      ["gateway_estimator_hold_bytes_per_token", "Body bytes per token a hold's input estimate is sized on, by model (4 until calibrated).", (v) => v.holdBytesPerToken],
      ["gateway_estimator_typical_error_pct", "Median absolute percentage error of count_tokens' estimate over the window, by model (once calibrated).", (v) => (v.calibrated ? v.typicalErrorPct : null)],
      ["gateway_estimator_plain_error_pct", "The same for the plain estimate (4 bytes a token for ASCII, a token a CJK character), by model.", (v) => v.plainErrorPct],
      ["gateway_estimator_output_samples", "Completed streams in the output calibration window (delivered bytes against the upstream's output count), by model.", (v) => v.output.samples],
      ["gateway_estimator_cancel_bytes_per_token", "Delivered bytes per token a cancelled stream's output is charged on, by model (the output window's lowest, once calibrated; 4 before).", (v) => v.output.cancelBytesPerToken],
    ];
    for (const [name, help, read] of figures) {
      new Gauge({
        name,
        help,
        labelNames: ["model"],
        registers: [this.registry],
        collect() {
          this.reset();
          for (const v of sources.calibration()) {
            const x = read(v);
            if (x !== null) this.set({ model: v.model }, x);
          }
        },
      });
    }
  }

  /**
   * One finished /v1 request, from its log row. Its cells are found by the model, path and status
   * themselves, not by a label string built per row: that string was made and hashed anew for each
   * series a row counts (bench/RESULTS.md).
   */
  row(r: LogRow): void {
    const model = r.model ?? "";
    const m = this.modelCells(model);
    // Any path a client sends would be a new series; unknown ones share one label.
    const path = this.endpointOf(r.path);
    const status = r.status;
    let byStatus = m.requests.get(path);
    if (!byStatus) m.requests.set(path, (byStatus = new Map()));
    let c = byStatus.get(status);
    if (!c) byStatus.set(status, (c = counted(this.requestCells, { path, model, status: String(status) })));
    c.value += 1;
    if (r.errorCode === "rate_limit") this.rateLimited.inc({ path });
    const route = r.provider && r.upstreamModel ? routeName(r.provider, r.upstreamModel) : null;
    if (route && r.upstreamLatencyMs !== undefined) this.upstreamLatency.observe(this.upstreamLatency.child(route, routeLabels), r.upstreamLatencyMs / 1000);
    if (route && r.ttfbMs !== undefined) this.ttfb.observe(this.ttfb.child(route, routeLabels), r.ttfbMs / 1000);
    if (r.inputTokens) this.addTokens(m, INPUT, r.inputTokens);
    if (r.outputTokens) this.addTokens(m, OUTPUT, r.outputTokens);
    if (r.cacheReadTokens) this.addTokens(m, CACHE_READ, r.cacheReadTokens);
    if (r.cacheWriteTokens) this.addTokens(m, CACHE_WRITE, r.cacheWriteTokens);
    // Added one request at a time, as prom-client did: the same float total, to the last bit.
    if (r.costNano) (m.cost ??= counted(this.costCells, { model })).value += nanoToUsd(r.costNano);
  }

  private modelCells(model: string): ModelCells {
    let m = this.byModel.get(model);
    if (!m) this.byModel.set(model, (m = { model, requests: new Map(), tokens: [], cost: undefined }));
    return m;
  }

  private addTokens(m: ModelCells, kind: number, n: number): void {
    (m.tokens[kind] ??= counted(this.tokenCells, { model: m.model, kind: KINDS[kind]! })).value += n;
  }

  // Published paths only are kept (a bounded set); others are looked up again, and share one label.
  private readonly endpoints = new Map<string, string>();

  /** The endpoint's path a request's path is labelled with (`/v1/models/{id}`), never the path itself. */
  private endpointOf(path: string): string {
    const known = this.endpoints.get(path);
    if (known) return known;
    const endpoint = this.sources.endpoint(path);
    if (endpoint === null) return "(unknown)";
    if (endpoint === path) this.endpoints.set(path, endpoint);
    return endpoint;
  }

  commitBatch(writes: number): void {
    this.batch.observe(this.batchSeries, writes);
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }
}

type Labels = Record<string, string>;
/** One series of a tallied counter: its labels and its total so far. */
interface Cell {
  labels: Labels;
  value: number;
}

/** A model's cells: requests by endpoint path then status, tokens by kind (KINDS' index), cost. */
interface ModelCells {
  model: string;
  requests: Map<string, Map<number, Cell>>;
  tokens: (Cell | undefined)[];
  cost: Cell | undefined;
}

/** The token kinds' labels, by the index a model's cells keep them under. */
const KINDS = ["input", "output", "cache_read", "cache_write"] as const;
const INPUT = 0;
const OUTPUT = 1;
const CACHE_READ = 2;
const CACHE_WRITE = 3;

/** A new series, listed after those counted before it: a scrape lists them in first-counted order. */
function counted(cells: Cell[], labels: Labels): Cell {
  const c = { labels, value: 0 };
  cells.push(c);
  return c;
}

/**
 * A counter whose series are plain totals in `cells`, written into prom-client only when scraped:
 * through prom-client, each increment hashed and validated its labels again, about half of the
 * metrics' cost per request (bench/RESULTS.md). The text a scrape gets is the same.
 */
function tallied(registry: Registry, cells: readonly Cell[], o: { name: string; help: string; labelNames: string[] }): Counter {
  return new Counter({
    ...o,
    registers: [registry],
    collect() {
      this.reset();
      for (const c of cells) this.inc(c.labels, c.value);
    },
  });
}
