import { and, count, desc, eq, isNotNull, max, sql, type SQL, type SQLWrapper } from "drizzle-orm";
import type { Either } from "../engine/either.ts";
import type { LogCursor, LogFilter, LogRecord, LogReports, UsageFilter, UsageRow } from "./contract.ts";
import { logsBefore, logWhere, newestLogsFirst, record } from "./filters.ts";

// The reports written once for both engines: the filters of filters.ts, the same rows and order on
// each. Each engine's file gives only what its SQL spells differently (a row's UTC day).

/** What differs in the reports' SQL between the engines. */
export interface ReportsDialect {
  /** A row's UTC day, YYYY-MM-DD, from its created_at (unix ms). */
  day(createdAt: SQLWrapper): SQL<string>;
}

export class ReportsOn implements LogReports {
  constructor(
    private readonly on: Either,
    private readonly dialect: ReportsDialect,
  ) {}

  /** Rows of request_logs with the names a report shows beside them. */
  private named() {
    const { db, t } = this.on;
    return db
      .select({ accountEmail: t.accounts.email, keyPrefix: t.apiKeys.prefix, log: t.requestLogs })
      .from(t.requestLogs)
      .leftJoin(t.accounts, eq(t.accounts.id, t.requestLogs.accountId))
      .leftJoin(t.apiKeys, eq(t.apiKeys.id, t.requestLogs.keyId));
  }

  /** The newest `limit` rows that match, newest first. */
  async list(filter: LogFilter, limit: number): Promise<LogRecord[]> {
    const logs = this.on.t.requestLogs;
    return (await this.named().where(logWhere(filter, logs)).orderBy(desc(logs.requestId)).limit(limit)).map(record);
  }

  /** One request's row; null when it is not in the log (never written, or pruned). */
  async find(requestId: string): Promise<LogRecord | null> {
    const [r] = await this.named().where(eq(this.on.t.requestLogs.requestId, requestId)).limit(1);
    return r ? record(r) : null;
  }

  /**
   * The rows of these keys that match, newest first by (created_at, request id), after `before`; all
   * of them when `limit` is null. Read key by key along request_logs_key_time (key_id, created_at, and
   * the primary key the index carries), each already in this order, and merged here: one IN over the
   * keys would sort every row of the account in a temporary b-tree to answer one page. New rows are
   * newer than any cursor, so paging is stable while requests are written. The keys' reads run at once.
   */
  async keysPage(keyIds: number[], filter: LogFilter, before: LogCursor | null, limit: number | null): Promise<LogRecord[]> {
    const logs = this.on.t.requestLogs;
    const pages = await Promise.all(
      keyIds.map((keyId) => {
        const q = this.named()
          .where(and(eq(logs.keyId, keyId), logWhere(filter, logs), logsBefore(before, logs)))
          .orderBy(desc(logs.createdAt), desc(logs.requestId));
        return limit === null ? q : q.limit(limit);
      }),
    );
    return newestLogsFirst(pages.flat().map(record), limit);
  }

  /** When each key was last used (its newest log row), by key id; keys without rows are left out. One index probe per key. */
  async lastUsedByKey(keyIds: number[]): Promise<Map<number, number>> {
    const { db, t } = this.on;
    const newest = await Promise.all(keyIds.map((keyId) => db.select({ at: max(t.requestLogs.createdAt) }).from(t.requestLogs).where(eq(t.requestLogs.keyId, keyId))));
    return new Map(keyIds.flatMap((keyId, i) => (newest[i]![0]?.at == null ? [] : [[keyId, newest[i]![0]!.at] as const])));
  }

  /** Each account's last request (its keys' newest log row), by account id; accounts whose keys have none are left out. */
  async lastRequestByAccount(): Promise<Map<number, number>> {
    const { db, t } = this.on;
    // A correlated MAX per key is one probe of request_logs_key_time; a GROUP BY over the log would
    // read all of it. Raw SQL: the query builder has no correlated subquery inside an aggregate.
    const rows = await db
      .select({ accountId: t.apiKeys.accountId, at: sql<number | null>`MAX((SELECT MAX(r.created_at) FROM request_logs r WHERE r.key_id = ${t.apiKeys.id}))`.mapWith(Number) })
      .from(t.apiKeys)
      .groupBy(t.apiKeys.accountId);
    return new Map(rows.flatMap((r) => (r.at === null ? [] : [[r.accountId, r.at] as const])));
  }

  /**
   * Spend per UTC day, account, key and model, newest day first. From the request log (the one table
   * that names the model), so it covers the retention period, and its cost is the price of the
   * requests: what a balance could not cover is the ledger's shortfall_nano. The email and prefix
   * are grouped too (PostgreSQL asks it), which the ids they hang on decide anyway.
   */
  async usage(filter: UsageFilter): Promise<UsageRow[]> {
    const { db, t } = this.on;
    const total = (c: SQLWrapper) => sql<number>`coalesce(sum(${c}), 0)`.mapWith(Number);
    const day = this.dialect.day(t.requestLogs.createdAt);
    return await db
      .select({
        day: day.as("day"),
        account_email: t.accounts.email,
        key_id: t.requestLogs.keyId,
        key_prefix: t.apiKeys.prefix,
        model: t.requestLogs.model,
        // Model requests only (a /v1/me or /v1/models row names no model): those served, and those refused or failed.
        requests: sql<number>`coalesce(sum(case when ${t.requestLogs.status} < 400 then 1 else 0 end), 0)`.mapWith(Number),
        refused: sql<number>`coalesce(sum(case when ${t.requestLogs.status} >= 400 then 1 else 0 end), 0)`.mapWith(Number),
        input_tokens: total(t.requestLogs.inputTokens),
        output_tokens: total(t.requestLogs.outputTokens),
        cost_nano: total(t.requestLogs.costNano).as("cost_nano"),
      })
      .from(t.requestLogs)
      .leftJoin(t.accounts, eq(t.accounts.id, t.requestLogs.accountId))
      .leftJoin(t.apiKeys, eq(t.apiKeys.id, t.requestLogs.keyId))
      .where(and(isNotNull(t.requestLogs.accountId), isNotNull(t.requestLogs.model), logWhere(filter, t.requestLogs)))
      .groupBy(day, t.requestLogs.accountId, t.requestLogs.keyId, t.requestLogs.model, t.accounts.email, t.apiKeys.prefix)
      .orderBy(sql`1 DESC`, sql`cost_nano DESC`);
  }
}
