import type { SQL } from "bun";
import type { Rider } from "../../ledger/hold.ts";
import type { PgDb } from "../engine/postgres/client.ts";
import { events } from "../../core/events.ts";
import { withoutNul } from "../../core/nul.ts";
import { DEFAULT_RETENTION_DAYS, type LogRow, type RequestLogStore, type Told } from "./contract.ts";
import { LOG_COLUMN_COUNT, LOG_COLUMNS, logValues, pruneBefore } from "./rows.ts";

// The request log on PostgreSQL (`[database] url`). A row per request, each its own INSERT, would
// cost every request a round trip and the pool a connection; rows written on their own are
// gathered instead and sent in one multi-row INSERT per turn of the event loop. A row written in
// the hold's transaction (the charge and its row commit together, as SQLite's group commit does)
// goes through that transaction at once.

/** Rows per statement: one turn's answer should stay small. */
const ROWS_PER_INSERT = 1_000;

const PLACEHOLDERS = `(${Array.from({ length: LOG_COLUMN_COUNT }, (_, c) => `$${c + 1}`).join(", ")})`;

const UPDATES = LOG_COLUMNS.split(",")
  .map((c) => c.trim())
  .filter((c) => c !== "request_id")
  .map((c) => `${c} = excluded.${c}`)
  .join(", ");

/** As SQLite's INSERT OR REPLACE: a request's later row replaces its earlier one. */
const INSERT_ONE = `INSERT INTO request_logs (${LOG_COLUMNS}) VALUES ${PLACEHOLDERS} ON CONFLICT (request_id) DO UPDATE SET ${UPDATES}`;

const COLUMN_NAMES = LOG_COLUMNS.split(",").map((c) => c.trim());

/**
 * Several rows in one statement whose text is the same whatever their count: the rows as one JSON
 * parameter ($1, text: Bun's client would encode a string given for jsonb as a JSON string). A text per count (a VALUES list of 27 parameters a row) was parsed and planned again
 * for every count on every connection of the pool: at c=16 a post batch came in 15 sizes
 * (bench/RESULTS.md, "PostgreSQL's own work per request"). One row alone keeps INSERT_ONE, whose
 * parameters take any text PostgreSQL's own input does.
 */
const INSERT_MANY = `INSERT INTO request_logs (${LOG_COLUMNS}) SELECT ${LOG_COLUMNS} FROM jsonb_populate_recordset(NULL::request_logs, $1::text::jsonb) ON CONFLICT (request_id) DO UPDATE SET ${UPDATES}`;

/** Rows' stored values (`storedValues`, in order) as INSERT_MANY's parameter. */
const manyParams = (rows: unknown[][]): unknown[] => [
  JSON.stringify(rows.map((values) => Object.fromEntries(COLUMN_NAMES.map((c, i) => [c, values[i]])))),
];

const MANY = { text: INSERT_MANY, params: manyParams };

/**
 * A row's values as PostgreSQL can store them: its text refuses U+0000, which SQLite's keeps and an
 * upstream's service_tier or a client's model name may carry. Refused, the row failed the charge it
 * rides on (a served answer answered 500, uncharged); each U+0000 is written as U+FFFD instead.
 */
function storedValues(r: LogRow, now: number): unknown[] {
  const v = logValues(r, now);
  for (let i = 0; i < v.length; i++) {
    const s = v[i];
    if (typeof s === "string") v[i] = withoutNul(s);
  }
  return v;
}

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
   * Without `tx`: the row joins this turn's INSERT and write returns at once, onRow told at once (the
   * request's outcome is settled already; a failed INSERT is an operator event per row, never the
   * request's failure). With `tx`: awaited in the transaction, and a failure rolls it back (PostgreSQL
   * aborts a transaction at its first failed statement, so the charge cannot commit without its row):
   * pg-ledger then releases the hold uncharged. The row is told only once `tx` has committed: write
   * resolves to the call that tells it, for whoever commits `tx`.
   */
  write(r: LogRow, tx?: SQL | null): void | Promise<void | Told> {
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
      params: storedValues(r, Date.now()),
      many: MANY,
      // Told only with the charge committed: a failed statement fails the request, whose failure's row is the one told.
      settled: (error) => {
        if (error) events.writeFailed("request_log", r.requestId, error);
        else this.onRow?.(r);
      },
    };
  }

  private async insertIn(tx: SQL, r: LogRow): Promise<Told> {
    try {
      await tx.unsafe(INSERT_ONE, storedValues(r, Date.now()) as never[]);
    } catch (e) {
      events.writeFailed("request_log", r.requestId, e);
      throw e;
    }
    // A closure on this path only: the server's rows ride on the charge's statement (rider).
    return () => this.onRow?.(r);
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
      const values = rows.map(({ row, at }) => storedValues(row, at));
      if (rows.length === 1) await this.sql.unsafe(INSERT_ONE, values[0] as never[]);
      else await this.sql.unsafe(INSERT_MANY, manyParams(values) as never[]);
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
