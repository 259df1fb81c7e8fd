import { and, count, desc, eq, gte, inArray, isNotNull, sql, type SQL, type SQLWrapper } from "drizzle-orm";
import type { Db } from "../db/client.ts";
import { accounts, apiKeys, requestLogs } from "../db/schema.ts";
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
}

const DAY_MS = 24 * 3600 * 1000;

function where(f: LogFilter): SQL | undefined {
  const parts: (SQL | undefined)[] = [
    f.accountId === undefined ? undefined : eq(requestLogs.accountId, f.accountId),
    f.keyIds === undefined ? undefined : inArray(requestLogs.keyId, f.keyIds),
    f.model === undefined ? undefined : eq(requestLogs.model, f.model),
    f.status === undefined ? undefined : sql`${requestLogs.status} BETWEEN ${f.status.min} AND ${f.status.max}`,
  ];
  if (f.since !== undefined) {
    // Ids begin with their time: the key range skips older rows without a created_at index (a day
    // of margin for clocks of other processes); created_at decides.
    parts.push(gte(requestLogs.requestId, requestIdPrefixAt(Math.max(f.since - DAY_MS, 0))), gte(requestLogs.createdAt, f.since));
  }
  return and(...parts.filter((p) => p !== undefined));
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
  return withNames(db).where(where(filter)).orderBy(desc(requestLogs.requestId)).limit(limit).all().map(record);
}

/** One request's row; null when it is not in the log (never written, or pruned). */
export function findLog(db: Db, requestId: string): LogRecord | null {
  const r = withNames(db).where(eq(requestLogs.requestId, requestId)).get();
  return r ? record(r) : null;
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
export function usageReport(db: Db, filter: Pick<LogFilter, "accountId" | "since">): UsageRow[] {
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
    .where(and(isNotNull(requestLogs.accountId), where(filter)))
    .groupBy((r) => [r.day, requestLogs.accountId, r.key_id, r.model])
    .orderBy((r) => [desc(r.day), desc(r.cost_nano)])
    .all();
}
