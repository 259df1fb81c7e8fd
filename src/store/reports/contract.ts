import type { requestLogs } from "../schema/sqlite.ts";

// The operator's reports over request_logs: cold paths, run by the CLI and the dashboard. They are
// the one place that reads another group's tables (docs/architecture.md): the account's email and
// the key's prefix, so a report names them without a second query per row. They never write.
// tests/logs/reports-contract.test.ts runs the same cases on both engines.

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

/** A status filter as the CLI and the dashboard take it: `402`, a class such as `4xx`, or `failures` (400 to 599); null when it is neither. */
export function statusRange(text: string): { min: number; max: number } | null {
  // Every refusal and failure: what a holder asks "why did this fail" about.
  if (text === "failures") return { min: 400, max: 599 };
  const x = /^([1-5])xx$/i.exec(text);
  if (x) return { min: Number(x[1]) * 100, max: Number(x[1]) * 100 + 99 };
  if (/^[1-5]\d\d$/.test(text)) return { min: Number(text), max: Number(text) };
  return null;
}

/** The operator's and the dashboard's reports, whichever database holds the log. Cold: async on both engines. */
export interface LogReports {
  list(filter: LogFilter, limit: number): Promise<LogRecord[]>;
  find(requestId: string): Promise<LogRecord | null>;
  keysPage(keyIds: number[], filter: LogFilter, before: LogCursor | null, limit: number | null): Promise<LogRecord[]>;
  lastUsedByKey(keyIds: number[]): Promise<Map<number, number>>;
  lastRequestByAccount(): Promise<Map<number, number>>;
  usage(filter: UsageFilter): Promise<UsageRow[]>;
}

export type UsageFilter = Pick<LogFilter, "accountId" | "keyIds" | "since">;

export type LogRecord = typeof requestLogs.$inferSelect & { accountEmail: string | null; keyPrefix: string | null };

/** Where a page of one account's rows stopped: the last row it showed. */
export interface LogCursor {
  createdAt: number;
  requestId: string;
}

export interface UsageRow {
  day: string;
  account_email: string | null;
  key_id: number | null;
  key_prefix: string | null;
  model: string | null;
  /** Model requests served (status below 400). */
  requests: number;
  /** Model requests refused or failed (4xx, 5xx): no spend, or only a cancelled stream's share. */
  refused: number;
  input_tokens: number;
  output_tokens: number;
  cost_nano: number;
}

// The dashboard overview's spend (docs/dashboard.md#overview): summary.ts, the same query on both engines.

export type SpendFilter = Pick<LogFilter, "accountId" | "keyIds" | "model" | "since" | "until">;

/** One UTC day's spend of one key on one model through one provider. */
export interface SpendRow {
  day: string;
  key_id: number | null;
  model: string | null;
  /** The provider that answered: which route's cache prices the saving is figured at. */
  provider: string | null;
  requests: number;
  cost_nano: number;
  cache_read_tokens: number;
  /** 5-minute and 1-hour writes together. */
  cache_write_tokens: number;
}

export interface SpendReports {
  spend(filter: SpendFilter): Promise<SpendRow[]>;
}
