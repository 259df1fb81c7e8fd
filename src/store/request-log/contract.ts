import type { SQL } from "bun";
import type { Commits } from "../commits/contract.ts";
import type { Rider } from "../../ledger/hold.ts";
import { events } from "../../core/events.ts";

// The request_logs table's writer: one row per /v1 request; content and keys never reach it. The
// reports on it are store/reports/'s. tests/logs/request-log-contract.test.ts runs both engines.

export const DAY_MS = 24 * 3600 * 1000;
/** `[logs] retention_days` when the config names none (kept 90 days, docs/api.md#limits). */
export const DEFAULT_RETENTION_DAYS = 90;
export const LOG_RETENTION_MS = DEFAULT_RETENTION_DAYS * DAY_MS;

/** Tells onRow of a row written through a transaction: for its caller to call once that transaction committed. */
export type Told = () => void;

export interface LogRow {
  requestId: string;
  accountId?: number | null;
  keyId?: number | null;
  method: string;
  path: string;
  endpoint?: string | null;
  model?: string | null;
  provider?: string | null;
  upstreamModel?: string | null;
  stream?: boolean;
  status: number;
  errorCode?: string | null;
  inputTokens?: number | null;
  outputTokens?: number | null;
  cacheReadTokens?: number | null;
  cacheWriteTokens?: number | null;
  cacheWrite1hTokens?: number | null;
  webSearches?: number | null;
  serviceTier?: string | null;
  /** The region Anthropic's answer says inference was pinned to (not "global"): billed at its premium. */
  inferenceGeo?: string | null;
  images?: number | null;
  /** Token-priced images: the edit sources' tokens and the output images' (the prompt's are inputTokens). */
  imageInputTokens?: number | null;
  imageOutputTokens?: number | null;
  costNano?: number;
  latencyMs: number;
  attempts?: number;
  /** The client's address, trust_proxy applied (docs/operations.md#behind-a-reverse-proxy-with-tls): what key allow-lists check. */
  clientIp?: string | null;
  // For the access log and metrics only, not stored: the key's visible prefix, and upstream timings.
  keyPrefix?: string;
  /** Sending upstream to its response headers (the route that answered). */
  upstreamLatencyMs?: number;
  /** Sending a streamed request upstream to its first event. */
  ttfbMs?: number;
}

/**
 * The request log as the relay and the server use it. `write` is the hot path: on SQLite it answers
 * at once (a prepared INSERT inside the group commit's open transaction, which an await would leave);
 * on PostgreSQL it answers at once too unless it writes through the hold's transaction `tx`.
 */
export interface RequestLogStore {
  /** How long rows are kept: `[logs] retention_days`. */
  readonly retentionDays: number;
  /**
   * Writes the row (never failing the request it describes) and tells onRow once the row is durable:
   * on SQLite after its group-commit batch's COMMIT (never for a batch that fails), at once outside a
   * batch. On PostgreSQL, `tx` is the hold's transaction (ledger/hold.ts Alongside) to write it
   * through, and write resolves to what tells onRow once `tx` has committed; SQLite's group commit
   * is already open on its one connection and gives null.
   */
  write(r: LogRow, tx?: SQL | null): void | Promise<void | Told>;
  /** Rows still on their way reach the database (the server's stop). */
  flush(): void | Promise<void>;
  /** PostgreSQL: the row as a rider on the charge's statement (store/commits/contract.ts), instead of a write in a transaction. */
  rider?(r: LogRow): Rider;
  /** Daily; synchronous on SQLite, whose suite reads the count as a value. */
  prune(now?: number): number | Promise<number>;
}

/**
 * Writes a row nobody waits on (a failure, a stream's end) through the server's commits: on SQLite
 * the group commit's batch, which waits out another process's write lock between turns. A failure
 * is one operator event.
 */
export function writeBatched(commits: Commits, logs: RequestLogStore, r: LogRow): Promise<void> {
  return commits.run(() => logs.write(r)).then(
    () => {},
    (e: unknown) => events.writeFailed("request_log", r.requestId, e),
  );
}
