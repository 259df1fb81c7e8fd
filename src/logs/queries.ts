import { and, desc, eq, gte, inArray, sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client.ts";
import { accounts, apiKeys, requestLogs } from "../db/schema.ts";
import { requestIdPrefixAt } from "../core/request-id.ts";

// The operator's reports over request_logs: cold paths, run by the CLI against the file.

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

/** The newest `limit` rows that match, newest first. */
export function listLogs(db: Db, filter: LogFilter, limit: number): LogRecord[] {
  return db
    .select({ accountEmail: accounts.email, keyPrefix: apiKeys.prefix, log: requestLogs })
    .from(requestLogs)
    .leftJoin(accounts, eq(accounts.id, requestLogs.accountId))
    .leftJoin(apiKeys, eq(apiKeys.id, requestLogs.keyId))
    .where(where(filter))
    .orderBy(desc(requestLogs.requestId))
    .limit(limit)
    .all()
    .map((r) => ({ ...r.log, accountEmail: r.accountEmail, keyPrefix: r.keyPrefix }));
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
  const cond = where(filter);
  // No table aliases: the filter's columns are written with their table's name.
  return db.all<UsageRow>(sql`
    SELECT date(request_logs.created_at / 1000, 'unixepoch') AS day, accounts.email AS account_email, request_logs.key_id,
           api_keys.prefix AS key_prefix, request_logs.model, COUNT(*) AS requests,
           COALESCE(SUM(request_logs.input_tokens), 0) AS input_tokens, COALESCE(SUM(request_logs.output_tokens), 0) AS output_tokens,
           COALESCE(SUM(request_logs.cost_nano), 0) AS cost_nano
    FROM ${requestLogs} LEFT JOIN ${accounts} ON accounts.id = request_logs.account_id LEFT JOIN ${apiKeys} ON api_keys.id = request_logs.key_id
    WHERE request_logs.account_id IS NOT NULL ${cond ? sql`AND ${cond}` : sql``}
    GROUP BY day, request_logs.account_id, request_logs.key_id, request_logs.model
    ORDER BY day DESC, cost_nano DESC`);
}
