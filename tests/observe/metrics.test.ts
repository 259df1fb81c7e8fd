import { describe, expect, it } from "bun:test";
import { nanoToUsd } from "../../src/core/money.ts";
import { Metrics } from "../../src/observe/metrics.ts";
import type { LogRow } from "../../src/store/request-log/contract.ts";
import { Counter, Histogram, Registry } from "prom-client";
import { TalliedHistogram } from "../../src/observe/tallied-histogram.ts";

const metrics = () => new Metrics({ holds: () => ({ count: 0, nano: 0 }), endpoint: (p) => p, routes: () => [], calibration: () => [] });
const row = (o: Partial<LogRow>): LogRow => ({ requestId: "r", method: "POST", path: "/v1/chat/completions", status: 200, latencyMs: 1, ...o });

describe("metrics from the request log rows", () => {
  it("sums each series' cost one request at a time, to the same float a per-request counter reached", async () => {
    const m = metrics();
    const costs = [1_234_567, 7, 99_999_999, 3_333_333, 1];
    let expected = 0;
    for (const c of costs) {
      m.row(row({ model: "m", costNano: c }));
      expected += nanoToUsd(c);
    }
    expect(await m.render()).toContain(`gateway_cost_usd_total{model="m"} ${expected}`);
  });

  it("lists only the token kinds that were counted, and counts on between scrapes", async () => {
    const m = metrics();
    m.row(row({ model: "m", inputTokens: 3, outputTokens: 0 }));
    expect(await m.render()).toContain('gateway_tokens_total{model="m",kind="input"} 3');
    m.row(row({ model: "m", inputTokens: 4, status: 429 }));
    const text = await m.render();
    expect(text).toContain('gateway_tokens_total{model="m",kind="input"} 7');
    expect(text).not.toContain('kind="output"');
    expect(text).toContain('gateway_requests_total{path="/v1/chat/completions",model="m",status="200"} 1');
    expect(text).toContain('gateway_requests_total{path="/v1/chat/completions",model="m",status="429"} 1');
  });

  it("renders a tallied histogram exactly as prom-client's histogram of the same observations, labelled or not, as text and as JSON", async () => {
    const bounds = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
    const theirs = new Registry();
    const ours = new Registry();
    const routed = new Histogram({ name: "h_routed", help: "by route", labelNames: ["route"], buckets: bounds, registers: [theirs] });
    const plain = new Histogram({ name: "h_plain", help: "unlabelled", buckets: [1, 2, 4, 8], registers: [theirs] });
    const tRouted = new TalliedHistogram(ours, "h_routed", "by route", bounds);
    const tPlain = new TalliedHistogram(ours, "h_plain", "unlabelled", [1, 2, 4, 8]);
    const plainSeries = tPlain.child("", () => ({}));
    // Unobserved: no routed series, the unlabelled one at zero, in both.
    expect(await ours.metrics()).toBe(await theirs.metrics());
    const values = [0.0031, 0.01, 0.0100001, 0.7, 3, 42, 0.049999, 1e-9, 5, 5.0001];
    values.forEach((v, i) => {
      const route = i % 3 === 0 ? "b/\"q\"" : "a/m";
      routed.labels(route).observe(v);
      tRouted.observe(tRouted.child(route, () => ({ route })), v);
      plain.observe(i * 1.7);
      tPlain.observe(plainSeries, i * 1.7);
    });
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(await ours.getMetricsAsJSON()).toEqual(await theirs.getMetricsAsJSON());
  });
});

describe("metrics over many rows", () => {
  /** The family `name` in a scrape's text: its HELP and TYPE lines and its samples. */
  const family = (text: string, name: string) => text.split("\n# HELP ").find((b) => b.startsWith(`${name} `)) ?? "";

  it("counts every series as prom-client's own counters and histograms fed row by row would, in first-counted order", async () => {
    const m = metrics();
    const ref = new Registry();
    const registers = [ref];
    const requests = new Counter({ name: "gateway_requests_total", help: "Requests on /v1 by endpoint path, model and status.", labelNames: ["path", "model", "status"], registers });
    const latency = new Histogram({ name: "gateway_upstream_latency_seconds", help: "Time from sending a request upstream to its response headers, by route.", labelNames: ["route"], buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300], registers });
    const tokens = new Counter({ name: "gateway_tokens_total", help: "Tokens billed, by model and kind (input, output, cache_read, cache_write).", labelNames: ["model", "kind"], registers });
    const cost = new Counter({ name: "gateway_cost_usd_total", help: "Cost of answered requests in USD, by model (the exact figures are in the ledger).", labelNames: ["model"], registers });
    const rows: Partial<LogRow>[] = [
      { model: "b", status: 200, provider: "p", upstreamModel: "u1", upstreamLatencyMs: 12, outputTokens: 5, costNano: 7 },
      { model: "a", status: 429, errorCode: "rate_limit" },
      { status: 404, path: "/v1/models/x" },
      { model: "b", status: 200, provider: "p", upstreamModel: "u2", upstreamLatencyMs: 0.3, inputTokens: 3, cacheWriteTokens: 2, cacheReadTokens: 9, costNano: 1_000_003 },
      { model: "a", status: 200, provider: "q", upstreamModel: "u1", upstreamLatencyMs: 4000, inputTokens: 1, outputTokens: 2, costNano: 5 },
      { model: "b", status: 502, provider: "p", upstreamModel: "u1", path: "/v1/messages" },
      { model: "b", status: 200, provider: "p", upstreamModel: "u1", upstreamLatencyMs: 7, inputTokens: 4, outputTokens: 6, costNano: 123_456_789 },
    ];
    for (const o of rows) {
      const r = row(o);
      m.row(r);
      const model = r.model ?? "";
      requests.inc({ path: r.path, model, status: String(r.status) });
      if (r.provider && r.upstreamModel && r.upstreamLatencyMs !== undefined) latency.observe({ route: `${r.provider}/${r.upstreamModel}` }, r.upstreamLatencyMs / 1000);
      for (const [kind, n] of [["input", r.inputTokens], ["output", r.outputTokens], ["cache_read", r.cacheReadTokens], ["cache_write", r.cacheWriteTokens]] as const) {
        if (n) tokens.inc({ model, kind }, n);
      }
      if (r.costNano) cost.inc({ model }, nanoToUsd(r.costNano));
    }
    const ours = await m.render();
    const theirs = await ref.metrics();
    for (const name of ["gateway_requests_total", "gateway_upstream_latency_seconds", "gateway_tokens_total", "gateway_cost_usd_total"]) {
      expect(family(ours, name)).toBe(family(theirs, name));
    }
  });
});
