import { and, count, desc, eq, isNotNull, max, sql, type SQLWrapper } from "drizzle-orm";
import type { Db } from "../engine/sqlite/client.ts";
import { accounts, apiKeys, requestLogs } from "../schema/sqlite.ts";
import type { LogCursor, LogFilter, LogRecord, LogReports, UsageFilter, UsageRow } from "./contract.ts";
import { logsBefore, logWhere, newestLogsFirst, record } from "./filters.ts";

// The reports on SQLite, the embedded default: the filters of filters.ts on this engine's tables.

const named = (db: Db) =>
  db
    .select({ accountEmail: accounts.email, keyPrefix: apiKeys.prefix, log: requestLogs })
    .from(requestLogs)
    .leftJoin(accounts, eq(accounts.id, requestLogs.accountId))
    .leftJoin(apiKeys, eq(apiKeys.id, requestLogs.keyId));

/** One request's row at once; null when it is not in the log (never written, or pruned). The retention's checks read it so. */
export function findLog(db: Db, requestId: string): LogRecord | null {
  const r = named(db).where(eq(requestLogs.requestId, requestId)).get();
  return r ? record(r) : null;
}

export class Reports implements LogReports {
  constructor(private readonly db: Db) {}

  /** The newest `limit` rows that match, newest first. */
  async list(filter: LogFilter, limit: number): Promise<LogRecord[]> {
    return (await named(this.db).where(logWhere(filter, requestLogs)).orderBy(desc(requestLogs.requestId)).limit(limit)).map(record);
  }

  async find(requestId: string): Promise<LogRecord | null> {
    return findLog(this.db, requestId);
  }

  /**
   * The rows of these keys that match, newest first by (created_at, request id), after `before`; all
   * of them when `limit` is null. Read key by key along request_logs_key_time (key_id, created_at, and
   * the primary key the index carries), each already in this order, and merged here: one IN over the
   * keys would sort every row of the account in a temporary b-tree to answer one page. New rows are
   * newer than any cursor, so paging is stable while requests are written.
   */
  async keysPage(keyIds: number[], filter: LogFilter, before: LogCursor | null, limit: number | null): Promise<LogRecord[]> {
    const pages = await Promise.all(
      keyIds.map((keyId) => {
        const q = named(this.db)
          .where(and(eq(requestLogs.keyId, keyId), logWhere(filter, requestLogs), logsBefore(before, requestLogs)))
          .orderBy(desc(requestLogs.createdAt), desc(requestLogs.requestId));
        return limit === null ? q : q.limit(limit);
      }),
    );
    return newestLogsFirst(pages.flat().map(record), limit);
  }

  /** When each key was last used (its newest log row), by key id; keys without rows are left out. One index probe per key. */
  async lastUsedByKey(keyIds: number[]): Promise<Map<number, number>> {
    const newest = await Promise.all(keyIds.map((keyId) => this.db.select({ at: max(requestLogs.createdAt) }).from(requestLogs).where(eq(requestLogs.keyId, keyId))));
    return new Map(keyIds.flatMap((keyId, i) => (newest[i]![0]?.at == null ? [] : [[keyId, newest[i]![0]!.at] as const])));
  }

  /** Each account's last request (its keys' newest log row), by account id; accounts whose keys have none are left out. */
  async lastRequestByAccount(): Promise<Map<number, number>> {
    // A correlated MAX per key is one probe of request_logs_key_time; a GROUP BY over the log would
    // read all of it. Raw SQL: the query builder has no correlated subquery inside an aggregate.
    const rows = await this.db
      .select({ accountId: apiKeys.accountId, at: sql<number | null>`MAX((SELECT MAX(r.created_at) FROM request_logs r WHERE r.key_id = ${apiKeys.id}))`.mapWith(Number) })
      .from(apiKeys)
      .groupBy(apiKeys.accountId);
    return new Map(rows.flatMap((r) => (r.at === null ? [] : [[r.accountId, r.at] as const])));
  }

  /**
   * Spend per UTC day, account, key and model, newest day first. From the request log (the one table
   * that names the model), so it covers the retention period, and its cost is the price of the
   * requests: what a balance could not cover is the ledger's shortfall_nano.
   */
  async usage(filter: UsageFilter): Promise<UsageRow[]> {
    const total = (c: SQLWrapper) => sql<number>`coalesce(sum(${c}), 0)`.mapWith(Number);
    const day = sql<string>`date(${requestLogs.createdAt} / 1000, 'unixepoch')`;
    return await this.db
      .select({
        day: day.as("day"),
        account_email: accounts.email,
        key_id: requestLogs.keyId,
        key_prefix: apiKeys.prefix,
        model: requestLogs.model,
        // Model requests only (a /v1/me or /v1/models row names no model): those served, and those refused or failed.
        requests: sql<number>`coalesce(sum(case when ${requestLogs.status} < 400 then 1 else 0 end), 0)`.mapWith(Number),
        refused: sql<number>`coalesce(sum(case when ${requestLogs.status} >= 400 then 1 else 0 end), 0)`.mapWith(Number),
        input_tokens: total(requestLogs.inputTokens),
        output_tokens: total(requestLogs.outputTokens),
        cost_nano: total(requestLogs.costNano).as("cost_nano"),
      })
      .from(requestLogs)
      .leftJoin(accounts, eq(accounts.id, requestLogs.accountId))
      .leftJoin(apiKeys, eq(apiKeys.id, requestLogs.keyId))
      .where(and(isNotNull(requestLogs.accountId), isNotNull(requestLogs.model), logWhere(filter, requestLogs)))
      .groupBy(day, requestLogs.accountId, requestLogs.keyId, requestLogs.model, accounts.email, apiKeys.prefix)
      .orderBy(sql`1 DESC`, sql`cost_nano DESC`);
  }
}
