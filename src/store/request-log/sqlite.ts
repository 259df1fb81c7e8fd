import type { Statement } from "bun:sqlite";
import { and, lt } from "drizzle-orm";
import { changedRows, type Db } from "../engine/sqlite/client.ts";
import type { GroupCommit } from "../commits/sqlite.ts";
import { requestLogs } from "../schema/sqlite.ts";
import { events } from "../../core/events.ts";
import { DEFAULT_RETENTION_DAYS, type LogRow, type RequestLogStore } from "./contract.ts";
import { fillLogValues, LOG_COLUMN_COUNT, LOG_COLUMNS, pruneBefore } from "./rows.ts";

/**
 * One row per /v1 request; content and keys never reach this table. The insert runs on every request
 * (a prepared statement, bench/RESULTS.md); pruning is daily, through the query builder. Reports: store/reports/.
 */
export class RequestLog implements RequestLogStore {
  private readonly insert: Statement;
  /** The row's values, refilled by each write (rows.ts, fillLogValues). */
  private readonly values: unknown[] = new Array(LOG_COLUMN_COUNT).fill(null);
  readonly retentionDays: number;
  /** Told of every row written, once it is committed (the access log and metrics). */
  private readonly onRow: ((r: LogRow) => void) | null;
  /** The serving process's group commit, told of the rows its update hook cannot see (this table is WITHOUT ROWID). */
  private readonly commits: GroupCommit | null;

  constructor(
    private readonly db: Db,
    opts: { retentionDays?: number; onRow?: (r: LogRow) => void; commits?: GroupCommit } = {},
  ) {
    this.retentionDays = opts.retentionDays ?? DEFAULT_RETENTION_DAYS;
    this.onRow = opts.onRow ?? null;
    this.commits = opts.commits ?? null;
    this.insert = db.$client.prepare(`INSERT OR REPLACE INTO request_logs (${LOG_COLUMNS}) VALUES (${Array(LOG_COLUMN_COUNT).fill("?").join(", ")})`);
  }

  write(r: LogRow): void {
    const commits = this.commits;
    commits?.wrote();
    try {
      // The values as one array: bun:sqlite binds it as the positional parameters, without a spread's copy.
      this.insert.run(fillLogValues(this.values, r, Date.now()) as never);
    } catch (e) {
      // A log row must never turn a served request into a failure; the event (rate-limited) keeps its id.
      events.writeFailed("request_log", r.requestId, e);
    }
    // Told once the row is durable (its batch committed), never for a batch that fails: a request whose
    // batch fails gets an error, and its failure's row is the one told.
    const onRow = this.onRow;
    if (onRow) commits ? commits.afterCommit(onRow, r) : onRow(r);
  }

  /** Every row is written when write returns. */
  flush(): void {}

  prune(now = Date.now()): number {
    // Request ids begin with their time (newRequestId), so the key range finds the candidates without a created_at index.
    const { idBefore, createdBefore } = pruneBefore(this.retentionDays, now);
    this.commits?.wrote();
    return changedRows(this.db.delete(requestLogs).where(and(lt(requestLogs.requestId, idBefore), lt(requestLogs.createdAt, createdBefore))).run());
  }
}
