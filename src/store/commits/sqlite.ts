import type { Database, Statement } from "bun:sqlite";
import { changeWatch, type ChangeWatch } from "../engine/sqlite/change-watch.ts";
import { databaseUnavailableCode } from "../../core/errors.ts";

/**
 * Group commit for the per-request writes (a settle and its request log row). A write runs at once
 * inside a batch transaction that stays open until the end of the current turn of the event loop;
 * then one COMMIT makes every write of the turn durable. A failing write rolls back alone: the first
 * write of a batch by rolling the batch back (nothing else is in it yet), any later one to its own
 * savepoint. A batch of n requests writes the shared pages (account, key, index leaves) and pays the
 * WAL commit once instead of n times (bench/RESULTS.md: about 8.5 requests per commit at c=16); a
 * lone request (concurrency 1) pays no savepoint.
 *
 * `run` is for writes a client must not see before they are durable (a charge and its log row): it
 * resolves after the COMMIT. `now` is for writes whose loss in a crash would change nothing: the
 * caller goes on at once. (Holds of running requests are not written at all: store/ledger/holds.ts.)
 */
/** How long a write waits for another process's lock (an operator's sqlite3, a VACUUM) before 503. */
export const LOCK_WAIT_MS = 2000;

const isBusy = (e: unknown) => /^SQLITE_(BUSY|LOCKED)/.test(String((e as { code?: unknown })?.code ?? ""));

export class GroupCommit {
  private open = false;
  /** Writes in the open batch; the first needs no savepoint. */
  private writes = 0;
  private waiters: { resolve(): void; reject(e: unknown): void }[] = [];
  private readonly savepoint: (fn: () => unknown) => unknown;
  private readonly watch: ChangeWatch;
  private readonly commitTurn = () => this.commit();
  // Prepared once: `db.run(sql)` compiles its text on every call, and these run on every batch.
  private readonly beginStmt: Statement;
  private readonly commitStmt: Statement;

  /** Told the size of each committed batch (metrics). */
  onCommit: ((writes: number) => void) | null = null;
  /** The last batch failed for the database's sake (full, read-only, locked): GET /readyz says not ready. */
  failing: unknown = null;

  constructor(private readonly db: Database) {
    // Inside the batch's BEGIN, bun:sqlite runs a transaction function as a SAVEPOINT.
    this.savepoint = db.transaction((fn: () => unknown) => fn());
    this.watch = changeWatch(db);
    this.beginStmt = db.prepare("BEGIN IMMEDIATE");
    this.commitStmt = db.prepare("COMMIT");
  }

  /** Runs `fn` (synchronous SQLite work) in the batch now and returns its result. */
  now<T>(fn: () => T): T {
    this.begin();
    const first = this.writes++ === 0;
    try {
      return (first ? fn() : this.savepoint(fn)) as T;
    } catch (e) {
      if (!this.db.inTransaction) {
        // SQLite ended the batch itself (it rolls back the transaction on SQLITE_FULL, SQLITE_IOERR, …):
        // every write of the batch is gone, so its waiters fail with this error, not with COMMIT's
        // "no transaction is active", which would hide a full disk behind a 500.
        this.open = false;
        for (const w of this.waiters.splice(0)) w.reject(e);
      } else if (first) {
        this.db.run("ROLLBACK");
        this.open = false;
      }
      // In-memory copies of rows may hold what was rolled back.
      this.watch.forget();
      if (databaseUnavailableCode(e)) this.failing = e;
      throw e;
    }
  }

  /**
   * Runs `fn` in the batch (now, or once another process lets go of the write lock); resolves with its
   * result once the batch is committed. A lock held past LOCK_WAIT_MS fails with SQLITE_BUSY (503).
   */
  async run<T>(fn: () => T): Promise<T> {
    // Synchronous while the lock is free, so that writes join the batch in the order they came.
    if (!this.open) {
      try {
        this.begin();
      } catch (e) {
        if (!isBusy(e)) throw e;
        await this.begun();
      }
    }
    const value = this.now(fn);
    const { promise, resolve, reject } = Promise.withResolvers<void>();
    this.waiters.push({ resolve, reject });
    await promise;
    return value;
  }

  /**
   * Why a write could not begin now (GET /readyz), or null: the last batch's failure, else what a
   * probe of the write lock met, waiting at most the busy timeout on the event loop.
   */
  writeRefusal(): unknown {
    if (this.failing) return this.failing;
    // A batch of ours is open: the database took a write this turn.
    if (this.db.inTransaction) return null;
    try {
      this.db.run("BEGIN IMMEDIATE");
      this.db.run("ROLLBACK");
      return null;
    } catch (e) {
      return e;
    }
  }

  /** BEGIN IMMEDIATE, retried between turns of the event loop while another process holds the lock. */
  private async begun(): Promise<void> {
    const deadline = performance.now() + LOCK_WAIT_MS;
    for (let pause = 2; ; pause = Math.min(pause * 2, 100)) {
      try {
        this.begin();
        return;
      } catch (e) {
        if (!isBusy(e)) throw e;
        if (performance.now() >= deadline) {
          this.failing = e;
          throw e;
        }
      }
      await Bun.sleep(pause);
    }
  }

  private begin(): void {
    if (this.open) return;
    // Only a transaction of ours may be open here: inside someone else's, "committed" would be a guess.
    if (this.db.inTransaction) throw new Error("GroupCommit used inside another transaction");
    this.beginStmt.run();
    this.open = true;
    this.writes = 0;
    // After the I/O callbacks of this turn: every request that got this far in it joins the batch.
    setImmediate(this.commitTurn);
  }

  private commit(): void {
    // A batch whose only write failed was rolled back already (a new one has its own turn's commit).
    if (!this.open) return;
    this.open = false;
    const waiters = this.waiters;
    this.waiters = [];
    try {
      // A write that fails quietly (a request log row never fails its request) may have ended the batch:
      // SQLite rolls the transaction back on SQLITE_FULL or an I/O error. COMMIT would say only
      // "no transaction is active"; the code says what happened (SQLite's own for this case).
      if (!this.db.inTransaction) throw Object.assign(new Error("the write batch was rolled back by SQLite (disk full or I/O error)"), { code: "SQLITE_ABORT_ROLLBACK" });
      this.commitStmt.run();
    } catch (e) {
      // Nothing of the batch is in the database; the holds it took are gone with it, which leaves
      // every balance consistent (a settle that finds no hold charges without releasing one).
      if (this.db.inTransaction) this.db.run("ROLLBACK");
      this.watch.forget();
      this.failing = e;
      for (const w of waiters) w.reject(e);
      return;
    }
    this.failing = null;
    this.onCommit?.(this.writes);
    for (const w of waiters) w.resolve();
  }
}
