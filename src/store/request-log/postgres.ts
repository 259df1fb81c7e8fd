import type { SQL } from "bun";
import type { Rider } from "../../ledger/hold.ts";
import type { PgDb } from "../engine/postgres/client.ts";
import { events } from "../../core/events.ts";
import { DEFAULT_RETENTION_DAYS, type LogRow, type RequestLogStore } from "./contract.ts";
import { LOG_COLUMN_COUNT, LOG_COLUMNS, logValues, pruneBefore } from "./rows.ts";

// The request log on PostgreSQL (`[database] url`). A row per request, each its own INSERT, would
// cost every request a round trip and the pool a connection; rows written on their own are
// gathered instead and sent in one multi-row INSERT per turn of the event loop. A row written in
// the hold's transaction (the charge and its row commit together, as SQLite's group commit does)
// goes through that transaction at once.

/** Rows per statement: PostgreSQL takes at most 65,535 parameters, 21 a row. */
const ROWS_PER_INSERT = 1_000;

const placeholders = (rows: number) =>
  Array.from({ length: rows }, (_, r) => `(${Array.from({ length: LOG_COLUMN_COUNT }, (_, c) => `$${r * LOG_COLUMN_COUNT + c + 1}`).join(", ")})`).join(", ");

const UPDATES = LOG_COLUMNS.split(",")
  .map((c) => c.trim())
  .filter((c) => c !== "request_id")
  .map((c) => `${c} = excluded.${c}`)
  .join(", ");

/** As SQLite's INSERT OR REPLACE: a request's later row replaces its earlier one. */
const insertSql = (rows: number) => `INSERT INTO request_logs (${LOG_COLUMNS}) VALUES ${placeholders(rows)} ON CONFLICT (request_id) DO UPDATE SET ${UPDATES}`;

const INSERT_ONE = insertSql(1);

/** Built once per row count: a batch of posts asks for the same few sizes again and again. */
const inserts = new Map<number, string>();
const insertOf = (n: number): string => {
  let text = inserts.get(n);
  if (!text) inserts.set(n, (text = insertSql(n)));
  return text;
};

export class PgRequestLog implements RequestLogStore {
  private readonly sql: SQL;
  readonly retentionDays: number;
  private readonly onRow: ((r: LogRow) => void) | null;
  /** Rows waiting for this turn's INSERT, by request id (a later row of a request replaces its earlier one). */
  private pending = new Map<string, { row: LogRow; at: number }>();
  private scheduled = false;
  private readonly sending = new Set<Promise<void>>();

  constructor(db: PgDb, opts: { retentionDays?: number; onRow?: (r: LogRow) => void } = {}) {
    this.sql = db.$client;
    this.retentionDays = opts.retentionDays ?? DEFAULT_RETENTION_DAYS;
    this.onRow = opts.onRow ?? null;
  }

  /**
   * Without `tx`: the row joins this turn's INSERT and write returns at once; a failed INSERT is an
   * operator event per row, never the request's failure. With `tx`: awaited in the transaction, and
   * a failure rolls it back (PostgreSQL aborts a transaction at its first failed statement, so the
   * charge cannot commit without its row): pg-ledger then releases the hold uncharged.
   */
  write(r: LogRow, tx?: SQL | null): void | Promise<void> {
    if (tx) return this.insertIn(tx, r);
    this.pending.set(r.requestId, { row: r, at: Date.now() });
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.send());
    }
    this.onRow?.(r);
  }

  rider(r: LogRow): Rider {
    return {
      text: INSERT_ONE,
      params: logValues(r, Date.now()),
      many: insertOf,
      settled: (error) => {
        if (error) events.writeFailed("request_log", r.requestId, error);
        this.onRow?.(r);
      },
    };
  }

  private async insertIn(tx: SQL, r: LogRow): Promise<void> {
    try {
      await tx.unsafe(INSERT_ONE, logValues(r, Date.now()) as never[]);
    } catch (e) {
      events.writeFailed("request_log", r.requestId, e);
      throw e;
    } finally {
      this.onRow?.(r);
    }
  }

  /** Sends the rows gathered so far; resolves when every INSERT under way has answered. */
  async flush(): Promise<void> {
    this.send();
    while (this.sending.size > 0) await Promise.all(this.sending);
  }

  private send(): void {
    this.scheduled = false;
    if (this.pending.size === 0) return;
    const rows = [...this.pending.values()];
    this.pending = new Map();
    for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
      const chunk = rows.slice(i, i + ROWS_PER_INSERT);
      const p = this.insert(chunk).finally(() => this.sending.delete(p));
      this.sending.add(p);
    }
  }

  /** One statement for the rows; if it is refused, one each, so that a row the table refuses costs only itself (as on SQLite). */
  private async insert(rows: { row: LogRow; at: number }[]): Promise<void> {
    try {
      await this.sql.unsafe(insertSql(rows.length), rows.flatMap(({ row, at }) => logValues(row, at)) as never[]);
    } catch (e) {
      if (rows.length > 1) await Promise.all(rows.map((r) => this.insert([r])));
      else events.writeFailed("request_log", rows[0]!.row.requestId, e);
    }
  }

  async prune(now = Date.now()): Promise<number> {
    const { idBefore, createdBefore } = pruneBefore(this.retentionDays, now);
    const r = await this.sql`DELETE FROM request_logs WHERE request_id < ${idBefore} AND created_at < ${createdBefore}`;
    return r.count;
  }
}
