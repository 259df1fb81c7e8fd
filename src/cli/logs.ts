import { Calibration } from "../ledger/calibration.ts";
import { statusRange, type LogFilter, type LogRecord } from "../store/reports/contract.ts";
import { costLines } from "./prices.ts";
import { imageCostLines } from "./image-prices.ts";
import { invocation, parse, sinceFlag, UsageError, wholeNumber } from "./args.ts";
import { openInstallation, output, outputCsv, type CliContext } from "./context.ts";
import { csv, formatUsd, iso, table, usd } from "./format.ts";
import { accountOf, findKeys } from "./key.ts";

export const LOGS_USAGE = `Usage:
  gateway logs show REQUEST_ID
  gateway logs list [--account EMAIL] [--key ID|PREFIX] [--model M] [--status N|4xx|5xx] [--since ISO8601|24h|7d] [--limit N] [--csv]
  gateway logs prune

show prints one request's row (no content, never a key): status, model, route, tokens, cost, with
the account's email and the key's prefix. list prints the newest rows first (--limit, default 50).
prune deletes rows older than [logs] retention_days (default 90), as the server does daily.`;

export const USAGE_USAGE = `Usage:
  gateway usage [--account EMAIL] [--since ISO8601|30d] [--csv]
  gateway usage --calibration [--csv]

Spend per UTC day, account, key and model, from the request log (so over its retention period):
requests, tokens and cost as priced; what a balance could not cover is in the ledger's shortfall_nano.

--calibration: the byte estimator per model, as the server last saved it (every few seconds, and at
stop): samples in the window (the last 500 requests whose upstream counted their input), median body
bytes per token (count_tokens' divisor), the bytes per token holds are sized on, and the median error
of count_tokens' estimate and of the plain 4-bytes rule. Calibrated from 20 samples on.`;

const FILTER_FLAGS = {
  account: { type: "string" },
  since: { type: "string" },
  csv: { type: "boolean" },
} as const;

function status(text: string): { min: number; max: number } {
  const range = statusRange(text);
  if (!range) throw new UsageError(`--status: an HTTP status like 402, or a class like 4xx or 5xx, not '${text}'`);
  return range;
}

async function filterOf(ctx: CliContext, v: { account?: string; key?: string; model?: string; status?: string; since?: string }): Promise<LogFilter> {
  const f: LogFilter = {};
  if (v.account !== undefined) f.accountId = (await accountOf(ctx, v.account)).id;
  if (v.key !== undefined) {
    const keyIds = /^\d+$/.test(v.key) ? [Number(v.key)] : (await findKeys(ctx, v.key)).map((k) => k.id);
    f.keyIds = keyIds;
    if (keyIds.length === 0) throw new UsageError(`--key: no key matches ${v.key.slice(0, 12)}`);
  }
  // The log names models by their canonical id; an alias finds them too.
  if (v.model !== undefined) f.model = ctx.catalog().lookup(v.model)?.id ?? v.model;
  if (v.status !== undefined) f.status = status(v.status);
  if (v.since !== undefined) f.since = sinceFlag(v.since);
  return f;
}

/** The row's cost line by line at the prices of the route that answered it (the model's current config); null without counts or a model. */
function costOfRow(ctx: CliContext, r: LogRecord) {
  const model = r.model ? ctx.catalog().lookup(r.model) : undefined;
  if (model?.endpoints.some((e) => e.startsWith("images."))) return imageCostLines(model, r);
  if (!model || r.inputTokens === null || r.outputTokens === null) return null;
  const prices = model.routes.find((route) => route.provider.id === r.provider)?.prices ?? model.priceTables[0]!;
  return costLines(prices, {
    input: r.inputTokens,
    output: r.outputTokens,
    cacheRead: r.cacheReadTokens ?? 0,
    cacheWrite: r.cacheWriteTokens ?? 0,
    cacheWrite1h: r.cacheWrite1hTokens ?? 0,
    webSearches: r.webSearches ?? 0,
    ...(r.serviceTier ? { serviceTier: r.serviceTier } : {}),
    ...(r.inferenceGeo ? { inferenceGeo: r.inferenceGeo } : {}),
  });
}

// A digit after a letter starts a word too: cacheWrite1hTokens is the column cache_write_1h_tokens.
const snakeCase = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`).replace(/([a-z])(\d)/g, "$1_$2");

function noCsvWithJson(v: { csv?: boolean; json?: boolean }): void {
  if (v.csv && v.json) throw new UsageError("--csv and --json: choose one");
}

export async function logsCommand(argv: string[]): Promise<void> {
  const [sub, ...rest] = argv;
  if (sub === "show") {
    const { values, words } = parse(rest, {}, ["id"]);
    if (!words.id) throw new UsageError("usage: gateway logs show REQUEST_ID");
    const ctx = await openInstallation(values, "read");
    const found = await ctx.reports.find(words.id);
    if (!found) throw new UsageError(`no request ${words.id} in the log (kept ${ctx.config.logRetentionDays} days)`);
    // Named as the table's columns (what sqlite3 shows), the request, its account and its key first.
    const { requestId, accountEmail, keyPrefix, costNano, ...columns } = found;
    const row = Object.fromEntries(Object.entries({ requestId, accountEmail, keyPrefix, ...columns }).map(([k, v]) => [snakeCase(k), v]));
    const view: Record<string, unknown> = { ...row, stream: Boolean(found.stream), cost_usd: usd(costNano), created_at: iso(found.createdAt) };
    let human = Object.entries({ ...view, cost_usd: formatUsd(costNano) })
      .map(([k, v]) => `${k.padEnd(21)} ${v ?? "-"}`)
      .join("\n");
    const cost = costOfRow(ctx, found);
    if (cost) {
      view.cost_lines = cost.lines;
      view.price_table = cost.table;
      human += `\n\ncost at today's prices (${cost.table}):\n${table(["class", "count", "price_usd", "unit", "cost_usd"], cost.lines.map((l) => [l.class, l.count, l.price_usd, l.unit, l.cost_usd]))}`;
      human += `\ntotal, rounded up once: ${formatUsd(cost.totalNano)} USD${cost.totalNano === costNano ? " (as charged)" : ` (charged ${formatUsd(costNano)}: an estimate, a cancelled stream's share, or prices changed since)`}`;
    }
    output(ctx, view, human);
    return;
  }
  if (sub === "list") {
    const { values } = parse(rest, { ...FILTER_FLAGS, key: { type: "string" }, model: { type: "string" }, status: { type: "string" }, limit: { type: "string" } });
    noCsvWithJson(values);
    const limit = values.limit === undefined ? 50 : wholeNumber("--limit", values.limit);
    const ctx = await openInstallation(values, "read");
    const rows = await ctx.reports.list(await filterOf(ctx, values), limit);
    const header = ["request_id", "created_at", "account", "key_prefix", "path", "model", "provider", "status", "error_code", "input_tokens", "output_tokens", "cost_usd", "latency_ms"];
    const cells = (money: (n: number) => string | number) =>
      rows.map((r) => [r.requestId, iso(r.createdAt), r.accountEmail, r.keyPrefix, r.path, r.model, r.provider, r.status, r.errorCode, r.inputTokens, r.outputTokens, money(r.costNano), r.latencyMs]);
    if (values.csv) return outputCsv(ctx, csv(header, cells(formatUsd)));
    const data = cells(usd).map((c) => Object.fromEntries(header.map((h, i) => [h, c[i]])));
    output(ctx, data, rows.length ? table(header, cells(formatUsd)) : "no matching requests");
    return;
  }
  if (sub === "prune") {
    const { values } = parse(rest, {});
    const ctx = await openInstallation(values, "write");
    const days = ctx.config.logRetentionDays;
    const removed = await ctx.requestLog.prune();
    const idem = await ctx.idempotency.prune();
    output(ctx, { removed, retention_days: days, idempotency_removed: idem }, `removed ${removed} request log row(s) older than ${days} days`);
    return;
  }
  throw new UsageError(`logs needs one of: show, list, prune (see ${invocation()} logs --help)`);
}

export async function usageCommand(argv: string[]): Promise<void> {
  const { values } = parse(argv, { ...FILTER_FLAGS, calibration: { type: "boolean" } });
  noCsvWithJson(values);
  if (values.calibration) {
    if (values.account !== undefined || values.since !== undefined) throw new UsageError("--calibration takes no --account or --since: the window is per model");
    return calibrationReport(await openInstallation(values, "read"), values.csv ?? false);
  }
  const ctx = await openInstallation(values, "read");
  const rows = await ctx.reports.usage(await filterOf(ctx, values));
  const header = ["day", "account", "key_id", "key_prefix", "model", "requests", "refused", "input_tokens", "output_tokens", "cost_usd"];
  const cells = rows.map((r) => [r.day, r.account_email, r.key_id, r.key_prefix, r.model, r.requests, r.refused, r.input_tokens, r.output_tokens, formatUsd(r.cost_nano)]);
  if (values.csv) return outputCsv(ctx, csv(header, cells));
  const data = rows.map(({ cost_nano, ...r }) => ({ ...r, cost_usd: usd(cost_nano) }));
  output(ctx, data, rows.length ? table(header, cells) : "no usage in the request log");
}

/** gateway usage --calibration: each model's window, read through its owners (settings rows, ledger/calibration.ts). */
async function calibrationReport(ctx: CliContext, asCsv: boolean): Promise<void> {
  const views = new Calibration(await ctx.settings()).views();
  const header = [
    "model", "samples", "calibrated", "median_bytes_per_token", "hold_bytes_per_token", "typical_error_pct", "plain_error_pct",
    "output_samples", "output_median_bytes_per_token", "cancel_bytes_per_token", "output_plain_error_pct",
  ];
  const cells = views.map((v) => [
    v.model, v.samples, v.calibrated ? "yes" : "no", v.medianBytesPerToken, v.holdBytesPerToken, v.typicalErrorPct, v.plainErrorPct,
    v.output.samples, v.output.medianBytesPerToken, v.output.cancelBytesPerToken, v.output.plainErrorPct,
  ]);
  if (asCsv) return outputCsv(ctx, csv(header, cells));
  const data = views.map((v) => ({
    model: v.model,
    samples: v.samples,
    calibrated: v.calibrated,
    median_bytes_per_token: v.medianBytesPerToken,
    hold_bytes_per_token: v.holdBytesPerToken,
    typical_error_pct: v.typicalErrorPct,
    plain_error_pct: v.plainErrorPct,
    // The output window: completed streams' delivered bytes against their output counts; a cancelled stream is charged on it.
    output_samples: v.output.samples,
    output_median_bytes_per_token: v.output.medianBytesPerToken,
    cancel_bytes_per_token: v.output.cancelBytesPerToken,
    output_plain_error_pct: v.output.plainErrorPct,
  }));
  output(ctx, data, views.length ? table(header, cells) : "no calibration yet: no settled request has reported its input tokens");
}
