import type { Statement } from "bun:sqlite";
import { and, lt } from "drizzle-orm";
import { changedRows, type Db } from "../engine/sqlite/client.ts";
import { requestLogs } from "../schema/sqlite.ts";
import { events } from "../../core/events.ts";
import { DEFAULT_RETENTION_DAYS, type LogRow, type RequestLogStore } from "./contract.ts";
import { LOG_COLUMN_COUNT, LOG_COLUMNS, logValues, pruneBefore } from "./rows.ts";

/**
 * One row per /v1 request; content and keys never reach this table. The insert runs on every request
 * (a prepared statement, bench/RESULTS.md); pruning is daily, through the query builder. Reports: store/reports/.
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
