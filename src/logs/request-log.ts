import type { SQL } from "bun";
import type { Statement } from "bun:sqlite";
import { and, lt } from "drizzle-orm";
import { changedRows, type Db } from "../store/engine/sqlite/client.ts";
import { requestLogs } from "../store/schema/sqlite.ts";
import type { Commits, Rider } from "../store/commits/contract.ts";
import { requestIdPrefixAt } from "../core/request-id.ts";
import { events } from "../core/events.ts";
import type { Awaitable } from "../core/awaitable.ts";

const DAY_MS = 24 * 3600 * 1000;
/** `[logs] retention_days` when the config names none (DESIGN: kept 90 days). */
export const DEFAULT_RETENTION_DAYS = 90;
export const LOG_RETENTION_MS = DEFAULT_RETENTION_DAYS * DAY_MS;

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
  images?: number | null;
  /** Token-priced images: the edit sources' tokens and the output images' (the prompt's are inputTokens). */
  imageInputTokens?: number | null;
  imageOutputTokens?: number | null;
  costNano?: number;
  latencyMs: number;
  attempts?: number;
  // For the access log and metrics only, not stored: the key's visible prefix, and upstream timings.
  keyPrefix?: string;
  /** Sending upstream to its response headers (the route that answered). */
  upstreamLatencyMs?: number;
  /** Sending a streamed request upstream to its first event. */
  ttfbMs?: number;
}

/** request_logs' columns in the order of `logValues`. */
export const LOG_COLUMNS = `request_id, account_id, key_id, method, path, endpoint, model, provider, upstream_model, stream,
  status, error_code, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cache_write_1h_tokens, web_searches, service_tier, images, image_input_tokens, image_output_tokens, cost_nano, latency_ms, attempts, created_at`;
export const LOG_COLUMN_COUNT = 26;

/** A row's stored values, in LOG_COLUMNS' order. */
export function logValues(r: LogRow, now: number): unknown[] {
  return [
    r.requestId,
    r.accountId ?? null,
    r.keyId ?? null,
    r.method,
    r.path,
    r.endpoint ?? null,
    r.model ?? null,
    r.provider ?? null,
    r.upstreamModel ?? null,
    r.stream ?? false,
    r.status,
    r.errorCode ?? null,
    r.inputTokens ?? null,
    r.outputTokens ?? null,
    r.cacheReadTokens ?? null,
    r.cacheWriteTokens ?? null,
    r.cacheWrite1hTokens ?? null,
    r.webSearches ?? null,
    r.serviceTier ?? null,
    r.images ?? null,
    r.imageInputTokens ?? null,
    r.imageOutputTokens ?? null,
    r.costNano ?? 0,
    Math.round(r.latencyMs),
    r.attempts ?? 0,
    now,
  ];
}

/** The request log as the relay and the server use it: `RequestLog` on SQLite, `PgRequestLog` (pg-request-log.ts) on PostgreSQL. */
export interface RequestLogStore {
  /** How long rows are kept: `[logs] retention_days`. */
  readonly retentionDays: number;
  /**
   * Writes the row (never failing the request it describes) and tells onRow. On PostgreSQL, `tx` is
   * the hold's transaction (ledger/hold.ts Alongside) to write it through; SQLite's group commit is
   * already open on its one connection and gives null.
   */
  write(r: LogRow, tx?: SQL | null): Awaitable<void>;
  /** Rows still on their way reach the database (the server's stop). */
  flush(): Awaitable<void>;
  /** PostgreSQL: the row as a rider on the charge's statement (db/commits.ts), instead of a write in a transaction. */
  rider?(r: LogRow): Rider;
  prune(now?: number): Awaitable<number>;
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

/** The first row older than the retention could be, by request id (time-ordered): a day of margin covers clock skew between processes, created_at decides. */
export const pruneBefore = (retentionDays: number, now: number) => {
  const cutoff = now - retentionDays * DAY_MS;
  return { idBefore: requestIdPrefixAt(cutoff + DAY_MS), createdBefore: cutoff };
};

/**
 * One row per /v1 request; content and keys never reach this table. The insert runs on every request
 * (a prepared statement, bench/RESULTS.md); pruning is daily, through the query builder. Reports: queries.ts.
 */
export class RequestLog implements RequestLogStore {
  private readonly insert: Statement;
  readonly retentionDays: number;
  /** Told of every row written (the access log and metrics). */
  private readonly onRow: ((r: LogRow) => void) | null;

  constructor(
    private readonly db: Db,
    opts: { retentionDays?: number; onRow?: (r: LogRow) => void } = {},
  ) {
    this.retentionDays = opts.retentionDays ?? DEFAULT_RETENTION_DAYS;
    this.onRow = opts.onRow ?? null;
    this.insert = db.$client.prepare(`INSERT OR REPLACE INTO request_logs (${LOG_COLUMNS}) VALUES (${Array(LOG_COLUMN_COUNT).fill("?").join(", ")})`);
  }

  write(r: LogRow): void {
    try {
      this.insert.run(...(logValues(r, Date.now()) as never[]));
    } catch (e) {
      // A log row must never turn a served request into a failure; the event (rate-limited) keeps its id.
      events.writeFailed("request_log", r.requestId, e);
    }
    this.onRow?.(r);
  }

  /** Every row is written when write returns. */
  flush(): void {}

  prune(now = Date.now()): number {
    // Request ids begin with their time (newRequestId), so the key range finds the candidates without a created_at index.
    const { idBefore, createdBefore } = pruneBefore(this.retentionDays, now);
    return changedRows(this.db.delete(requestLogs).where(and(lt(requestLogs.requestId, idBefore), lt(requestLogs.createdAt, createdBefore))).run());
  }
}
