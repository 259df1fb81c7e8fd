import type { KeyRow } from "../../store/keys/contract.ts";
import { csv } from "../../core/csv.ts";
import { GatewayError, invalidRequest } from "../../core/errors.ts";
import { formatUsd, nanoToUsd } from "../../core/money.ts";
import type { StatementItem, StatementPosition } from "../../store/accounts/contract.ts";
import { statusRange, type LogCursor, type LogFilter, type LogRecord } from "../../store/reports/contract.ts";
import type { SessionCall } from "../session-guard.ts";
import { json } from "../exchange.ts";
import { isoTime, readIsoTime } from "../../core/time.ts";
import type { DailyUsage, LedgerEntry, LedgerPage, RequestPage, RequestRow } from "../api-schemas.ts";

// The account holder's figures (docs/dashboard.md): the ledger, the request log and the daily spend
// of the session's own account, read by the owners' queries the CLI's `gateway account show`,
// `logs list` and `usage` use. Never a prompt, a completion or a key: the tables hold none.

const DAY_MS = 24 * 3600 * 1000;

/** The query's parameters; one the route does not take is refused by name rather than ignored. */
export function queryOf(c: SessionCall, takes: string[]): URLSearchParams {
  const q = new URL(c.request.url).searchParams;
  for (const name of q.keys()) {
    if (!takes.includes(name)) throw invalidRequest(`${name}: not a parameter of ${c.request.method} ${c.pathname}; it takes ${takes.length ? takes.join(", ") : "none"}`);
  }
  return q;
}

/** A whole number parameter within [min, max]; `fallback` when absent. */
function wholeParam(q: URLSearchParams, name: string, fallback: number, min: number, max: number): number {
  const text = q.get(name);
  if (text === null) return fallback;
  if (!/^\d{1,6}$/.test(text) || Number(text) < min || Number(text) > max) throw invalidRequest(`${name}: a whole number from ${min} to ${max}, not '${text}'`);
  return Number(text);
}

export const limitParam = (q: URLSearchParams) => wholeParam(q, "limit", 50, 1, 500);

// GET /api/ledger: the cursor pins the list to the newest ledger id of its first page.

const CURSOR = /^([0-9a-z]+)-([0-9a-z]+)-([0-9a-z]+)$/;
const cursorText = (upTo: number, p: StatementPosition) => [upTo, p.createdAt, p.id].map((n) => n.toString(36)).join("-");

function cursorOf(text: string): { upTo: number; at: StatementPosition } {
  const m = CURSOR.exec(text);
  if (!m) throw invalidRequest(`before: '${text}' is not a cursor this route gave (the 'next' of a page)`);
  const [upTo, createdAt, id] = m.slice(1).map((d) => parseInt(d, 36)) as [number, number, number];
  return { upTo, at: { createdAt, id } };
}

/** A statement item as the dashboard shows it: charges grouped per UTC day, every other entry alone. */
export const ledgerView = (e: StatementItem): LedgerEntry =>
  e.kind === "charges"
    ? { kind: e.kind, day: e.day, amount_usd: nanoToUsd(e.amountNano), count: e.count, created_at: isoTime(e.createdAt) }
    : { kind: e.kind, amount_usd: nanoToUsd(e.amountNano), note: e.note, external_ref: e.externalRef, created_at: isoTime(e.createdAt) };

export async function getLedger(c: SessionCall): Promise<Response> {
  const q = queryOf(c, ["limit", "before"]);
  const limit = limitParam(q);
  const given = q.get("before");
  const { upTo, at } = given === null ? { upTo: await c.svc.accounts.newestLedgerId(), at: null } : cursorOf(given);
  const items = await c.svc.accounts.statementPage(c.session!.accountId, upTo, at, limit + 1);
  const page = items.slice(0, limit);
  return json<LedgerPage>({ object: "list", data: page.map(ledgerView), next: items.length > limit ? cursorText(upTo, page.at(-1)!.at) : null });
}

const LEDGER_COLUMNS = ["created_at", "kind", "day", "count", "amount_usd", "note", "external_ref"] as const;
const STATEMENT_PAGE = 500;

/** GET /api/ledger.csv: every item of the statement, as the pages read it, pinned to its newest entry. */
export async function getLedgerCsv(c: SessionCall): Promise<Response> {
  queryOf(c, []);
  const accountId = c.session!.accountId;
  const upTo = await c.svc.accounts.newestLedgerId();
  const items: StatementItem[] = [];
  for (let at: StatementPosition | null = null; ; ) {
    const page = await c.svc.accounts.statementPage(accountId, upTo, at, STATEMENT_PAGE);
    items.push(...page);
    if (page.length < STATEMENT_PAGE) break;
    at = page.at(-1)!.at;
  }
  const rows = items.map((e) => [
    isoTime(e.createdAt),
    e.kind,
    e.kind === "charges" ? e.day : null,
    e.kind === "charges" ? e.count : null,
    // The exact decimal, as requests.csv writes its costs.
    formatUsd(e.amountNano),
    e.kind === "charges" ? null : e.note,
    e.kind === "charges" ? null : e.externalRef,
  ]);
  return new Response(csv([...LEDGER_COLUMNS], rows), {
    headers: { "content-type": "text/csv; charset=utf-8", "content-disposition": 'attachment; filename="ledger.csv"' },
  });
}

// GET /api/requests and /api/requests.csv: the same filters, one page or every row.

const FILTERS = ["key_id", "model", "status", "since", "until"];

function timeParam(q: URLSearchParams, name: string): number | undefined {
  const text = q.get(name);
  if (text === null) return undefined;
  const read = readIsoTime(text);
  if ("why" in read) throw invalidRequest(`${name}: ${read.why}`);
  return read.ms;
}

/**
 * The account's keys, or the one `key_id` names: text that is no id is refused as unreadable (400),
 * an id of no key of this account as not found (404), the same for another account's.
 */
export async function keysOfParam(c: SessionCall, q: URLSearchParams): Promise<KeyRow[]> {
  const keys = await c.svc.keys.ofAccount(c.session!.accountId);
  const keyId = q.get("key_id");
  if (keyId === null) return keys;
  if (!/^[1-9]\d{0,15}$/.test(keyId)) throw invalidRequest(`key_id: a key's id, a whole number such as 12 (GET /api/keys lists them), not '${keyId}'`);
  const one = keys.filter((k) => String(k.id) === keyId);
  if (one.length === 0) throw new GatewayError("key_not_found", `key_id: no key with id ${keyId} on this account.`);
  return one;
}

/**
 * The `model` filter as the log names it: the canonical id of a catalog name or alias, else the text
 * as given (a model the catalog no longer has); empty text names nothing and is refused.
 */
export function modelParam(c: SessionCall, q: URLSearchParams): string | undefined {
  const model = q.get("model");
  if (model === null) return undefined;
  if (model === "") throw invalidRequest("model: a model id or alias such as demo-text-1, not ''");
  return c.svc.catalog.lookup(model)?.id ?? model;
}

/** The account's keys the rows are read by (one, with key_id) and the filter of the other parameters. */
async function requestFilter(c: SessionCall, q: URLSearchParams): Promise<{ keys: KeyRow[]; filter: LogFilter }> {
  const accountId = c.session!.accountId;
  const keys = await keysOfParam(c, q);
  const filter: LogFilter = { accountId, since: timeParam(q, "since"), until: timeParam(q, "until") };
  // The log names models by their canonical id; an alias finds them too, as with `gateway logs list`.
  const model = modelParam(c, q);
  if (model !== undefined) filter.model = model;
  const status = q.get("status");
  if (status !== null) {
    filter.status = statusRange(status) ?? undefined;
    if (!filter.status) throw invalidRequest(`status: an HTTP status such as 402, a class such as 2xx, 4xx or 5xx, or failures, not '${status}'`);
  }
  return { keys, filter };
}

const COLUMNS = ["request_id", "created_at", "key_id", "key_prefix", "key_name", "model", "endpoint", "path", "status", "error_code", "input_tokens", "output_tokens",
  "cache_read_tokens", "cache_write_tokens", "cache_write_1h_tokens", "web_searches", "service_tier", "inference_geo", "images", "image_input_tokens", "image_output_tokens", "cost_usd", "latency_ms", "stream", "attempts"] as const;

export function requestView(r: LogRecord, names: Map<number, string>): RequestRow {
  return {
    request_id: r.requestId,
    created_at: isoTime(r.createdAt),
    key_id: r.keyId,
    key_prefix: r.keyPrefix,
    key_name: r.keyId === null ? null : (names.get(r.keyId) ?? null),
    model: r.model,
    endpoint: r.endpoint,
    path: r.path,
    status: r.status,
    error_code: r.errorCode,
    input_tokens: r.inputTokens,
    output_tokens: r.outputTokens,
    // Each price class's count (docs/pricing.md): cache_write_tokens are the 5-minute writes.
    cache_read_tokens: r.cacheReadTokens,
    cache_write_tokens: r.cacheWriteTokens,
    cache_write_1h_tokens: r.cacheWrite1hTokens,
    web_searches: r.webSearches,
    service_tier: r.serviceTier,
    inference_geo: r.inferenceGeo,
    // Images kept, and a token-priced answer's image classes (docs/pricing.md#images).
    images: r.images,
    image_input_tokens: r.imageInputTokens,
    image_output_tokens: r.imageOutputTokens,
    cost_usd: nanoToUsd(r.costNano),
    latency_ms: r.latencyMs,
    stream: Boolean(r.stream),
    attempts: r.attempts,
  };
}

/** The cursor's row, which must be one of this account's: its place in the order is its created_at. */
async function requestCursor(c: SessionCall, requestId: string): Promise<LogCursor> {
  const row = await c.svc.reports.find(requestId);
  if (!row || row.accountId !== c.session!.accountId) throw invalidRequest(`before: no request ${requestId} of this account in the log`);
  return { createdAt: row.createdAt, requestId: row.requestId };
}

export async function getRequests(c: SessionCall): Promise<Response> {
  const q = queryOf(c, [...FILTERS, "limit", "before"]);
  const limit = limitParam(q);
  const { keys, filter } = await requestFilter(c, q);
  const before = q.get("before");
  const rows = await c.svc.reports.keysPage(keys.map((k) => k.id), filter, before === null ? null : await requestCursor(c, before), limit + 1);
  const names = new Map(keys.map((k) => [k.id, k.name]));
  const page = rows.slice(0, limit);
  return json<RequestPage>({ object: "list", data: page.map((r) => requestView(r, names)), next: rows.length > limit ? page.at(-1)!.requestId : null });
}

export async function getRequestsCsv(c: SessionCall): Promise<Response> {
  const { keys, filter } = await requestFilter(c, queryOf(c, FILTERS));
  const names = new Map(keys.map((k) => [k.id, k.name]));
  const rows = (await c.svc.reports.keysPage(keys.map((k) => k.id), filter, null, null)).map((r) => {
    const v = requestView(r, names);
    // The exact decimal, as `gateway logs list --csv` writes it: a spreadsheet sums it without float noise.
    return COLUMNS.map((col) => {
      const x = v[col];
      return col === "cost_usd" ? formatUsd(r.costNano) : typeof x === "boolean" ? String(x) : x;
    });
  });
  return new Response(csv([...COLUMNS], rows), {
    headers: { "content-type": "text/csv; charset=utf-8", "content-disposition": 'attachment; filename="requests.csv"' },
  });
}

// GET /api/usage/daily: `gateway usage` for one account, as series for a chart.

export async function getDailyUsage(c: SessionCall): Promise<Response> {
  const q = queryOf(c, ["days", "by"]);
  const days = wholeParam(q, "days", 30, 1, 366);
  const by = q.get("by") ?? "key";
  if (by !== "key" && by !== "model") throw invalidRequest(`by: key or model, not '${by}'`);
  const today = Math.floor(Date.now() / DAY_MS) * DAY_MS;
  const since = today - (days - 1) * DAY_MS;
  const dayList = Array.from({ length: days }, (_, i) => isoTime(since + i * DAY_MS).slice(0, 10));
  const index = new Map(dayList.map((d, i) => [d, i]));
  const keys = await c.svc.keys.ofAccount(c.session!.accountId);
  const names = new Map(keys.map((k) => [k.id, k.name || k.prefix]));
  const rows = await c.svc.reports.usage({ accountId: c.session!.accountId, keyIds: keys.map((k) => k.id), since });
  const series = new Map<string, { id: number | string | null; label: string; nano: number[] }>();
  const total = dayList.map(() => 0);
  for (const r of rows) {
    const i = index.get(r.day);
    if (i === undefined || r.cost_nano === 0) continue;
    const id = by === "key" ? r.key_id : r.model;
    const label = by === "key" ? (r.key_id === null ? "" : (names.get(r.key_id) ?? "")) : (r.model ?? "");
    const s = series.get(String(id)) ?? { id, label, nano: dayList.map(() => 0) };
    s.nano[i]! += r.cost_nano;
    total[i]! += r.cost_nano;
    series.set(String(id), s);
  }
  return json<DailyUsage>({
    object: "usage",
    by,
    days: dayList,
    series: [...series.values()].map((s) => ({ id: s.id, label: s.label, cost_usd: s.nano.map(nanoToUsd) })),
    total_usd: total.map(nanoToUsd),
  });
}
