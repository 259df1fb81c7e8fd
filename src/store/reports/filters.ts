import { and, eq, gte, inArray, lt, lte, or, sql, type SQL } from "drizzle-orm";
import type { requestLogs as pgRequestLogs } from "../schema/postgres.ts";
import type { requestLogs } from "../schema/sqlite.ts";
import { requestIdPrefixAt } from "../../core/request-id.ts";
import type { LogCursor, LogFilter, LogRecord } from "./contract.ts";

// One definition of the reports' filters, order and rows for both engines: each engine's file
// only runs them on its own tables.

const DAY_MS = 24 * 3600 * 1000;

/** The filter's condition on request_logs of either engine (`t`: either schema's table). */
export function logWhere(f: LogFilter, t: typeof requestLogs | typeof pgRequestLogs): SQL | undefined {
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
export function logsBefore(before: LogCursor | null, t: typeof requestLogs | typeof pgRequestLogs): SQL | undefined {
  return before ? and(lte(t.createdAt, before.createdAt), or(lt(t.createdAt, before.createdAt), lt(t.requestId, before.requestId))) : undefined;
}

/** Rows of several keys' pages merged newest first by (created_at, request id), cut at `limit`. */
export function newestLogsFirst(rows: LogRecord[], limit: number | null): LogRecord[] {
  rows.sort((a, b) => b.createdAt - a.createdAt || (a.requestId < b.requestId ? 1 : a.requestId > b.requestId ? -1 : 0));
  return limit === null ? rows : rows.slice(0, limit);
}


/** A row with the names a report shows beside it. */
export const record = (r: { accountEmail: string | null; keyPrefix: string | null; log: typeof requestLogs.$inferSelect }): LogRecord => ({
  ...r.log,
  accountEmail: r.accountEmail,
  keyPrefix: r.keyPrefix,
});
