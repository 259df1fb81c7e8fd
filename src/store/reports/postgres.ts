import { and, count, desc, eq, isNotNull, max, sql, type SQLWrapper } from "drizzle-orm";
import type { PgDb } from "../engine/postgres/client.ts";
import { accounts, apiKeys, requestLogs } from "../schema/postgres.ts";
import type { LogCursor, LogFilter, LogRecord, LogReports, UsageFilter, UsageRow } from "./contract.ts";
import { logsBefore, logWhere, newestLogsFirst, record } from "./filters.ts";

// The reports on PostgreSQL (`[database] url`): the filters of filters.ts on this engine's tables,
// the same rows and order as on SQLite.

const named = (db: PgDb) =>
  db
    .select({ accountEmail: accounts.email, keyPrefix: apiKeys.prefix, log: requestLogs })
    .from(requestLogs)
    .leftJoin(accounts, eq(accounts.id, requestLogs.accountId))
    .leftJoin(apiKeys, eq(apiKeys.id, requestLogs.keyId));

export class PgLogReports implements LogReports {
  constructor(private readonly db: PgDb) {}

  /** The newest `limit` rows that match, newest first. */
  async list(filter: LogFilter, limit: number): Promise<LogRecord[]> {
    return (await named(this.db).where(logWhere(filter, requestLogs)).orderBy(desc(requestLogs.requestId)).limit(limit)).map(record);
  }

  async find(requestId: string): Promise<LogRecord | null> {
    const [r] = await named(this.db).where(eq(requestLogs.requestId, requestId)).limit(1);
    return r ? record(r) : null;
  }

  /** Key by key along request_logs_key_time, merged here, as on SQLite; the keys' reads run at once. */
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

  /** A newest-row probe of request_logs_key_time per key, the keys' reads at once. */
  async lastUsedByKey(keyIds: number[]): Promise<Map<number, number>> {
    const newest = await Promise.all(keyIds.map((keyId) => this.db.select({ at: max(requestLogs.createdAt) }).from(requestLogs).where(eq(requestLogs.keyId, keyId))));
    return new Map(keyIds.flatMap((keyId, i) => (newest[i]![0]?.at == null ? [] : [[keyId, newest[i]![0]!.at] as const])));
  }

  async lastRequestByAccount(): Promise<Map<number, number>> {
    // A correlated max per key is one index probe; a GROUP BY over the log would read all of it.
    // Raw SQL: the query builder has no correlated subquery inside an aggregate.
    const rows = await this.db
      .select({ accountId: apiKeys.accountId, at: sql<number | null>`max((SELECT max(r.created_at) FROM request_logs r WHERE r.key_id = ${apiKeys.id}))`.mapWith(Number) })
      .from(apiKeys)
      .groupBy(apiKeys.accountId);
    return new Map(rows.flatMap((r) => (r.at === null ? [] : [[r.accountId, r.at] as const])));
  }

  /** As on SQLite; the email and prefix are grouped too, which the ids they hang on decide anyway. */
  async usage(filter: UsageFilter): Promise<UsageRow[]> {
    const total = (c: SQLWrapper) => sql<number>`coalesce(sum(${c}), 0)`.mapWith(Number);
    const day = sql<string>`to_char(to_timestamp(${requestLogs.createdAt} / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD')`;
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
