import { and, count, desc, eq, gte, inArray, isNotNull, lt, lte, max, or, sql, type SQL, type SQLWrapper } from "drizzle-orm";
import type { Awaitable } from "../core/awaitable.ts";
import type { Db } from "../store/engine/sqlite/client.ts";
import type { requestLogs as pgRequestLogs } from "../store/schema/postgres.ts";
import { accounts, apiKeys, requestLogs } from "../store/schema/sqlite.ts";
import { requestIdPrefixAt } from "../core/request-id.ts";

// The operator's reports over request_logs: cold paths, run by the CLI against the file. They are the
// one place that reads another group's tables (docs/architecture.md): the account's email and the
// key's prefix, so a report names them without a second query per row. They never write.

export interface LogFilter {
  accountId?: number;
  keyIds?: number[];
  model?: string;
  /** Inclusive range: 429 is {min: 429, max: 429}, "5xx" is {min: 500, max: 599}. */
  status?: { min: number; max: number };
  /** Unix ms: rows made at or after it. */
  since?: number;
  /** Unix ms: rows made before it. */
  until?: number;
}

/** A status filter as the CLI and the dashboard take it: `402`, or a class such as `4xx`; null when it is neither. */
export function statusRange(text: string): { min: number; max: number } | null {
  const x = /^([1-5])xx$/i.exec(text);
  if (x) return { min: Number(x[1]) * 100, max: Number(x[1]) * 100 + 99 };
  if (/^[1-5]\d\d$/.test(text)) return { min: Number(text), max: Number(text) };
  return null;
}

const DAY_MS = 24 * 3600 * 1000;

/** The filter's condition on request_logs of either engine (`t`: db/schema.ts's table or db/pg-schema.ts's). */
export function logWhere(f: LogFilter, t: typeof requestLogs | typeof pgRequestLogs = requestLogs): SQL | undefined {
  const parts: (SQL | undefined)[] = [
    f.accountId === undefined ? undefined : eq(t.accountId, f.accountId),
    f.keyIds === undefined ? undefined : inArray(t.keyId, f.keyIds),
    f.model === undefined ? undefined : eq(t.model, f.model),
    f.status === undefined ? undefined : sql`${t.status} BETWEEN ${f.status.min} AND ${f.status.max}`,
    f.until === undefined ? undefined : lt(t.createdAt, f.until),
  ];
  if (f.since !== undefined) {
    // Ids begin with their time: the key range skips older rows without a created_at index (a day
    // of margin for clocks of other processes); created_at decides.
    parts.push(gte(t.requestId, requestIdPrefixAt(Math.max(f.since - DAY_MS, 0))), gte(t.createdAt, f.since));
  }
  return and(...parts.filter((p) => p !== undefined));
}

/** A page's cursor as a condition: rows older than `before` by (created_at, request id). */
export function logsBefore(before: LogCursor | null, t: typeof requestLogs | typeof pgRequestLogs = requestLogs): SQL | undefined {
  return before ? and(lte(t.createdAt, before.createdAt), or(lt(t.createdAt, before.createdAt), lt(t.requestId, before.requestId))) : undefined;
}

/** Rows of several keys' pages merged newest first by (created_at, request id), cut at `limit`. */
export function newestLogsFirst(rows: LogRecord[], limit: number | null): LogRecord[] {
  rows.sort((a, b) => b.createdAt - a.createdAt || (a.requestId < b.requestId ? 1 : a.requestId > b.requestId ? -1 : 0));
  return limit === null ? rows : rows.slice(0, limit);
}

/**
 * The operator's and the dashboard's reports, whichever database holds the log: `Reports` on SQLite
 * (the functions below), `PgLogReports` on PostgreSQL (pg-queries.ts).
 */
export interface LogReports {
  list(filter: LogFilter, limit: number): Awaitable<LogRecord[]>;
  find(requestId: string): Awaitable<LogRecord | null>;
  keysPage(keyIds: number[], filter: LogFilter, before: LogCursor | null, limit: number | null): Awaitable<LogRecord[]>;
  lastUsedByKey(keyIds: number[]): Awaitable<Map<number, number>>;
  lastRequestByAccount(): Awaitable<Map<number, number>>;
  usage(filter: UsageFilter): Awaitable<UsageRow[]>;
}

export type UsageFilter = Pick<LogFilter, "accountId" | "keyIds" | "since">;

export class Reports implements LogReports {
  constructor(private readonly db: Db) {}
  list = (filter: LogFilter, limit: number) => listLogs(this.db, filter, limit);
  find = (requestId: string) => findLog(this.db, requestId);
  keysPage = (keyIds: number[], filter: LogFilter, before: LogCursor | null, limit: number | null) => keysLogPage(this.db, keyIds, filter, before, limit);
  lastUsedByKey = (keyIds: number[]) => lastUsedByKey(this.db, keyIds);
  lastRequestByAccount = () => lastRequestByAccount(this.db);
  usage = (filter: UsageFilter) => usageReport(this.db, filter);
}

export type LogRecord = typeof requestLogs.$inferSelect & { accountEmail: string | null; keyPrefix: string | null };

const withNames = (db: Db) =>
  db
    .select({ accountEmail: accounts.email, keyPrefix: apiKeys.prefix, log: requestLogs })
    .from(requestLogs)
    .leftJoin(accounts, eq(accounts.id, requestLogs.accountId))
    .leftJoin(apiKeys, eq(apiKeys.id, requestLogs.keyId));

const record = (r: { accountEmail: string | null; keyPrefix: string | null; log: typeof requestLogs.$inferSelect }): LogRecord => ({
  ...r.log,
  accountEmail: r.accountEmail,
  keyPrefix: r.keyPrefix,
});

/** The newest `limit` rows that match, newest first. */
export function listLogs(db: Db, filter: LogFilter, limit: number): LogRecord[] {
  return withNames(db).where(logWhere(filter)).orderBy(desc(requestLogs.requestId)).limit(limit).all().map(record);
}

/** One request's row; null when it is not in the log (never written, or pruned). */
export function findLog(db: Db, requestId: string): LogRecord | null {
  const r = withNames(db).where(eq(requestLogs.requestId, requestId)).get();
  return r ? record(r) : null;
}

/** Where a page of one account's rows stopped: the last row it showed. */
export interface LogCursor {
  createdAt: number;
  requestId: string;
}

/**
 * The rows of these keys that match, newest first by (created_at, request id), after `before`; all
 * of them when `limit` is null. Read key by key along request_logs_key_time (key_id, created_at, and
 * the primary key the index carries), each already in this order, and merged here: one IN over the
 * keys would sort every row of the account in a temporary b-tree to answer one page. New rows are
 * newer than any cursor, so paging is stable while requests are written.
 */
export function keysLogPage(db: Db, keyIds: number[], filter: LogFilter, before: LogCursor | null, limit: number | null): LogRecord[] {
  const after = logsBefore(before);
  const rows = keyIds.flatMap((keyId) => {
    const q = withNames(db)
      .where(and(eq(requestLogs.keyId, keyId), logWhere(filter), after))
      .orderBy(desc(requestLogs.createdAt), desc(requestLogs.requestId));
    return (limit === null ? q : q.limit(limit)).all().map(record);
  });
  return newestLogsFirst(rows, limit);
}

/** When each key was last used (its newest log row), by key id; keys without rows are left out. One index probe per key. */
export function lastUsedByKey(db: Db, keyIds: number[]): Map<number, number> {
  const used = new Map<number, number>();
  for (const keyId of keyIds) {
    const at = db.select({ at: max(requestLogs.createdAt) }).from(requestLogs).where(eq(requestLogs.keyId, keyId)).get()?.at;
    if (at !== null && at !== undefined) used.set(keyId, at);
  }
  return used;
}

/** Each account's last request (its keys' newest log row), by account id; accounts whose keys have none are left out. */
export function lastRequestByAccount(db: Db): Map<number, number> {
  // A correlated MAX per key is one probe of request_logs_key_time; a GROUP BY over the log would read all of it.
  const rows = db
    .select({ accountId: apiKeys.accountId, at: sql<number | null>`MAX((SELECT MAX(r.created_at) FROM request_logs r WHERE r.key_id = ${apiKeys.id}))` })
    .from(apiKeys)
    .groupBy(apiKeys.accountId)
    .all();
  return new Map(rows.flatMap((r) => (r.at === null ? [] : [[r.accountId, r.at] as const])));
}

export interface UsageRow {
  day: string;
  account_email: string | null;
  key_id: number | null;
  key_prefix: string | null;
  model: string | null;
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cost_nano: number;
}

/**
 * Spend per UTC day, account, key and model, newest day first. From the request log (the one table
 * that names the model), so it covers the retention period, and its cost is the price of the
 * requests: what a balance could not cover is the ledger's shortfall_nano.
 */
export function usageReport(db: Db, filter: UsageFilter): UsageRow[] {
  const sum = (c: SQLWrapper) => sql<number>`COALESCE(SUM(${c}), 0)`;
  return db
    .select({
      day: sql<string>`date(${requestLogs.createdAt} / 1000, 'unixepoch')`.as("day"),
      account_email: accounts.email,
      key_id: requestLogs.keyId,
      key_prefix: apiKeys.prefix,
      model: requestLogs.model,
      requests: count(),
      input_tokens: sum(requestLogs.inputTokens),
      output_tokens: sum(requestLogs.outputTokens),
      cost_nano: sum(requestLogs.costNano).as("cost_nano"),
    })
    .from(requestLogs)
    .leftJoin(accounts, eq(accounts.id, requestLogs.accountId))
    .leftJoin(apiKeys, eq(apiKeys.id, requestLogs.keyId))
    .where(and(isNotNull(requestLogs.accountId), logWhere(filter)))
    .groupBy((r) => [r.day, requestLogs.accountId, r.key_id, r.model])
    .orderBy((r) => [desc(r.day), desc(r.cost_nano)])
    .all();
}
