import { and, count, desc, eq, isNotNull, sql, type SQLWrapper } from "drizzle-orm";
import type { PgDb } from "../store/engine/postgres/client.ts";
import { accounts, apiKeys, requestLogs } from "../store/schema/postgres.ts";
import { logsBefore, logWhere, newestLogsFirst, type LogCursor, type LogFilter, type LogRecord, type LogReports, type UsageFilter, type UsageRow } from "./queries.ts";

// The reports of queries.ts on PostgreSQL (`[database] url`): the same filters (logWhere, on this
// engine's table), the same rows and order. Like those, they read the account's email and the
// key's prefix beside each row, and never write.

const NAMED = { accountEmail: accounts.email, keyPrefix: apiKeys.prefix, log: requestLogs };

type Named = { accountEmail: string | null; keyPrefix: string | null; log: typeof requestLogs.$inferSelect };
const record = (r: Named): LogRecord => ({ ...r.log, accountEmail: r.accountEmail, keyPrefix: r.keyPrefix });

export class PgLogReports implements LogReports {
  constructor(private readonly db: PgDb) {}

  private named() {
    return this.db.select(NAMED).from(requestLogs).leftJoin(accounts, eq(accounts.id, requestLogs.accountId)).leftJoin(apiKeys, eq(apiKeys.id, requestLogs.keyId));
  }

  async list(filter: LogFilter, limit: number): Promise<LogRecord[]> {
    return (await this.named().where(logWhere(filter, requestLogs)).orderBy(desc(requestLogs.requestId)).limit(limit)).map(record);
  }

  async find(requestId: string): Promise<LogRecord | null> {
    const [r] = await this.named().where(eq(requestLogs.requestId, requestId)).limit(1);
    return r ? record(r) : null;
  }

  /** Key by key along request_logs_key_time, merged here, as on SQLite; the keys' reads run at once. */
  async keysPage(keyIds: number[], filter: LogFilter, before: LogCursor | null, limit: number | null): Promise<LogRecord[]> {
    const pages = await Promise.all(
      keyIds.map((keyId) => {
        const q = this.named()
          .where(and(eq(requestLogs.keyId, keyId), logWhere(filter, requestLogs), logsBefore(before, requestLogs)))
          .orderBy(desc(requestLogs.createdAt), desc(requestLogs.requestId));
        return limit === null ? q : q.limit(limit);
      }),
    );
    return newestLogsFirst(pages.flat().map(record), limit);
  }

  /** One statement: a newest-row probe of request_logs_key_time per key. */
  async lastUsedByKey(keyIds: number[]): Promise<Map<number, number>> {
    if (keyIds.length === 0) return new Map();
    const rows = (await this.db.$client.unsafe(
      `SELECT k::text AS key_id, (SELECT max(r.created_at) FROM request_logs r WHERE r.key_id = k)::text AS at FROM unnest($1::bigint[]) AS k`,
      [keyIds],
    )) as { key_id: string; at: string | null }[];
    return new Map(rows.flatMap((r) => (r.at === null ? [] : [[Number(r.key_id), Number(r.at)] as const])));
  }

  async lastRequestByAccount(): Promise<Map<number, number>> {
    // A correlated max per key is one index probe; a GROUP BY over the log would read all of it.
    const rows = (await this.db.$client.unsafe(
      `SELECT account_id::text, max((SELECT max(r.created_at) FROM request_logs r WHERE r.key_id = k.id))::text AS at FROM api_keys k GROUP BY account_id`,
    )) as { account_id: string; at: string | null }[];
    return new Map(rows.flatMap((r) => (r.at === null ? [] : [[Number(r.account_id), Number(r.at)] as const])));
  }

  /** As usageReport on SQLite; the email and prefix are grouped too, which the ids they hang on decide anyway. */
  usage(filter: UsageFilter): Promise<UsageRow[]> {
    const total = (c: SQLWrapper) => sql<number>`coalesce(sum(${c}), 0)`.mapWith(Number);
    const day = sql<string>`to_char(to_timestamp(${requestLogs.createdAt} / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD')`;
    return this.db
      .select({
        day: day.as("day"),
        account_email: accounts.email,
        key_id: requestLogs.keyId,
        key_prefix: apiKeys.prefix,
        model: requestLogs.model,
        requests: count(),
        input_tokens: total(requestLogs.inputTokens),
        output_tokens: total(requestLogs.outputTokens),
        cost_nano: total(requestLogs.costNano).as("cost_nano"),
      })
      .from(requestLogs)
      .leftJoin(accounts, eq(accounts.id, requestLogs.accountId))
      .leftJoin(apiKeys, eq(apiKeys.id, requestLogs.keyId))
      .where(and(isNotNull(requestLogs.accountId), logWhere(filter, requestLogs)))
      .groupBy(day, requestLogs.accountId, requestLogs.keyId, requestLogs.model, accounts.email, apiKeys.prefix)
      .orderBy(sql`1 DESC`, sql`cost_nano DESC`);
  }
}
