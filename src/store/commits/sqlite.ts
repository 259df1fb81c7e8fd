import type { Database, Statement } from "bun:sqlite";
import { changeWatch, type ChangeWatch } from "../engine/sqlite/change-watch.ts";
import { databaseUnavailableCode } from "../../core/errors.ts";

/**
 * Group commit for the per-request writes (a settle and its request log row). A write runs at once
 * inside a batch transaction that stays open until the end of the current turn of the event loop;
 * then one COMMIT makes every write of the turn durable. A batch of n requests writes the shared pages
 * (account, key, index leaves) and pays the WAL commit once instead of n times (bench/RESULTS.md: about
 * 8.5 requests per commit at c=16).
 *
 * A failing write rolls back alone, though no write takes a savepoint (its statements and the copies
 * of the pages it touches cost more than the rest of a small write, bench/RESULTS.md): the batch is
 * rolled back and its other writes run again, in order, in a new transaction. Each is a function of the
 * database as it finds it, and their callers get the results of that run, the one that commits. That
 * is exact only while every write in the batch is one of ours: a write on this connection that did not
 * come through here (an operator's credit, a session, made while a batch is open) is reported by
 * SQLite's update hook, or told through `wrote` for a WITHOUT ROWID table, which the hook does not
 * report; every later write of that batch then takes a savepoint of its own, as all did before.
 *
 * `run` is for writes a client must not see before they are durable (a charge and its log row): it
 * resolves after the COMMIT. `now` is for writes whose loss in a crash would change nothing: the
 * caller goes on at once. (Holds of running requests are not written at all: store/ledger/holds.ts.)
 */
/** How long a write waits for another process's lock (an operator's sqlite3, a VACUUM) before 503. */
export const LOCK_WAIT_MS = 2000;

// SQLite's own code for a transaction it rolled back itself.
const batchLost = () => Object.assign(new Error("the write batch was rolled back by SQLite (disk full or I/O error)"), { code: "SQLITE_ABORT_ROLLBACK" });

/** A write that never joined a batch: told settled at once, its promise rejected as an async `run` rejected. */
function failedWrite<T>(e: unknown, settled: (() => void) | null): Promise<T> {
  settled?.();
  return Promise.reject(e);
}

const isBusy = (e: unknown) => /^SQLITE_(BUSY|LOCKED)/.test(String((e as { code?: unknown })?.code ?? ""));

/** One write of the open batch: what it runs (again, should a later one fail), its result, its waiter. */
interface Write {
  fn: () => unknown;
  value: unknown;
  resolve: ((value: unknown) => void) | null;
  reject: ((e: unknown) => void) | null;
  /** Told once the write is committed or failed, before its waiter (see `run`). */
  settled: (() => void) | null;
}

export class GroupCommit {
  private open = false;
  /** The open batch's writes, in order. */
  private writes: Write[] = [];
  /** A write that did not come through here has joined the open batch: a rollback would undo it. */
  private foreign = false;
  /** One of our writes is running: what it writes is its own. */
  private inWrite = false;
  /** SQLite's update hook is set: while a batch is open, between our writes. */
  private listening = false;
  /**
   * The open batch holds the write lock and looked for other connections' commits after taking it: the
   * in-memory copies of rows (store/engine/sqlite/change-watch.ts) are exact until the batch ends, as
   * long as whoever writes on this connection keeps them current or forgets them, as the writers of money do.
   */
  exact = false;
  /**
   * What to tell once the open batch commits (a request log row, to the access log and metrics), in the
   * order written: whom, and of what. Never told for a batch that fails; a replay writes the rows again
   * and keeps only its own (see redo). Reused across batches: no array or closure per request.
   */
  private readonly tellers: ((row: never) => void)[] = [];
  private readonly told: unknown[] = [];
  private readonly savepoint: (fn: () => unknown) => unknown;
  private readonly watch: ChangeWatch;
  private readonly commitTurn = () => this.commit();
  private readonly seen = () => this.wrote();
  // Prepared once: `db.run(sql)` compiles its text on every call, and these run on every batch.
  private readonly beginStmt: Statement;
  private readonly commitStmt: Statement;
  private readonly rollbackStmt: Statement;

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
    this.rollbackStmt = db.prepare("ROLLBACK");
    // Rows our writes delete are rare: this one stays set (see listen).
    db.onDelete = this.seen;
  }

  /** Told of a write on this connection that SQLite's update hook does not report (a WITHOUT ROWID table's). */
  wrote(): void {
    if (this.open && !this.inWrite) this.foreign = true;
  }

  /**
   * Tells `tell` of `row`, written just now, once it is durable: after the open batch's COMMIT, or at
   * once when no batch is open (the write committed by itself). Never if the batch fails.
   */
  afterCommit<R>(tell: (row: R) => void, row: R): void {
    if (!this.open) return tell(row);
    this.tellers.push(tell);
    this.told.push(row);
  }

  /** The open batch's COMMIT, if one is open: an empty write joins it and settles with it. Without one, every write committed by itself. */
  durable(): Promise<void> {
    return this.open ? this.run(() => undefined) : Promise.resolve();
  }

  /** Runs `fn` (synchronous SQLite work) in the batch now and returns its result. */
  now<T>(fn: () => T): T {
    return this.write(fn).value as T;
  }

  /**
   * Runs `fn` in the batch (now, or once another process lets go of the write lock); resolves with its
   * result once the batch is committed. A lock held past LOCK_WAIT_MS fails with SQLITE_BUSY (503).
   * `settled` is called once the write's fate is known (committed, or failed however it failed), right
   * before its promise settles: the ledger lets a posted hold go there, without an async layer of its
   * own. Not async itself: with the lock free, the promise is the waiter's own, where an async layer
   * (its generator, promise, scopes and function, and the turns of adopting the waiter's promise) cost
   * 0.18 µs a write (bench/RESULTS.md).
   */
  run<T>(fn: () => T, settled: (() => void) | null = null): Promise<T> {
    // Synchronous while the lock is free, so that writes join the batch in the order they came.
    if (!this.open) {
      try {
        this.begin();
      } catch (e) {
        if (!isBusy(e)) return failedWrite(e, settled);
        return this.runWhenBegun(fn, settled);
      }
    }
    let w: Write;
    try {
      w = this.write(fn);
    } catch (e) {
      return failedWrite(e, settled);
    }
    const { promise, resolve, reject } = Promise.withResolvers<unknown>();
    w.resolve = resolve;
    w.reject = reject;
    w.settled = settled;
    return promise as Promise<T>;
  }

  /** `run` once another process has let go of the write lock. */
  private async runWhenBegun<T>(fn: () => T, settled: (() => void) | null): Promise<T> {
    try {
      await this.begun();
    } catch (e) {
      return failedWrite(e, settled);
    }
    return this.run(fn, settled);
  }

  private write(fn: () => unknown): Write {
    this.begin();
    if (this.writes.length > 0 && !this.db.inTransaction) {
      // A write that fails quietly (a log row) let SQLite end the batch: its writes are gone, and its
      // rows are not to be told; this one starts the next.
      this.end(batchLost());
      this.begin();
    }
    // After a foreign write, a savepoint of its own, as every write had before: a rollback would undo that write.
    const own = this.foreign;
    this.listen(false);
    this.inWrite = true;
    // What the write asks to tell is undone with it.
    const telling = this.told.length;
    let value: unknown;
    try {
      value = own ? this.savepoint(fn) : fn();
    } catch (e) {
      this.inWrite = false;
      this.tellers.length = this.told.length = telling;
      this.failed(e, own);
      throw e;
    }
    this.inWrite = false;
    this.listen(true);
    const w: Write = { fn, value, resolve: null, reject: null, settled: null };
    this.writes.push(w);
    return w;
  }
  /**
   * Undoes a write that threw and keeps the rest of the batch, or ends the batch. Without a savepoint of
   * its own, by rolling the batch back and running its other writes again (see the class's comment).
   */
  private failed(e: unknown, own: boolean): void {
    // In-memory copies of rows may hold what was rolled back.
    this.watch.forget();
    if (databaseUnavailableCode(e)) this.failing = e;
    if (!this.db.inTransaction) {
      // SQLite ended the batch itself (it rolls back the transaction on SQLITE_FULL, SQLITE_IOERR, …):
      // every write of the batch is gone, so its waiters fail with this error, not with COMMIT's
      // "no transaction is active", which would hide a full disk behind a 500.
      this.end(e);
    } else if (!own) {
      this.redo();
    }
    this.listen(this.open);
  }

  /**
   * Rolls the batch back and runs its writes again, in order, in a new transaction. A write that fails
   * now (it read what the failed one left undone differently) fails alone too, and the rest run once
   * more. Between the ROLLBACK and the BEGIN another process (the CLI's credit) may take the write
   * lock. The BEGIN then waits for it on the connection's busy_timeout, the event loop blocked (the
   * server's: 10 ms): a write that short is over by then and the replay goes on as usual. Held longer,
   * the BEGIN fails with SQLITE_BUSY and so do the batch's writes, as a failed COMMIT fails them: each
   * told settled (its hold let go), its waiter rejected (503), nothing of them in the database. The
   * replay runs inside the failing write's call, so it cannot wait between turns as `run` does.
   */
  private redo(): void {
    this.inWrite = true;
    try {
      for (let again = true; again; ) {
        again = false;
        this.rollbackStmt.run();
        this.exact = false;
        this.watch.forget();
        // The writes run again ask again: each row is told once, and a write that fails now tells nothing.
        this.untell();
        if (this.writes.length === 0) {
          this.open = false;
          return;
        }
        try {
          this.beginStmt.run();
          this.watch.check();
        } catch (e) {
          this.failing = e;
          return this.end(e);
        }
        this.exact = true;
        for (let i = 0; i < this.writes.length; i++) {
          const w = this.writes[i]!;
          try {
            w.value = w.fn();
          } catch (e) {
            this.watch.forget();
            if (databaseUnavailableCode(e)) this.failing = e;
            if (!this.db.inTransaction) return this.end(e);
            this.writes.splice(i, 1);
            w.settled?.();
            w.reject?.(e);
            again = true;
            break;
          }
        }
      }
    } finally {
      this.inWrite = false;
    }
  }

  /** The batch is gone: every write of it fails with `e`. */
  private end(e: unknown): void {
    this.open = false;
    this.exact = false;
    // What the copies learnt from it is gone too.
    this.watch.forget();
    this.untell();
    for (const w of this.writes.splice(0)) {
      w.settled?.();
      w.reject?.(e);
    }
  }

  /**
   * SQLite's update hook for inserted and updated rows, set while a batch is open and none of our writes
   * runs: a row it reports was written by someone else. Set and cleared around each write (a few native
   * calls), which costs less than a call into JavaScript for each row a charge writes.
   */
  private listen(on: boolean): void {
    if (on === this.listening) return;
    this.listening = on;
    const hook = on ? this.seen : null;
    this.db.onInsert = hook;
    this.db.onUpdate = hook;
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
        // Others may write before this batch's first write, which follows a turn of microtasks later.
        this.listen(true);
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
    this.watch.check();
    this.exact = true;
    this.open = true;
    this.writes = [];
    this.foreign = false;
    // After the I/O callbacks of this turn: every request that got this far in it joins the batch.
    setImmediate(this.commitTurn);
  }

  private commit(): void {
    // A batch whose only write failed was rolled back already (a new one has its own turn's commit).
    if (!this.open) return;
    this.open = false;
    this.exact = false;
    this.listen(false);
    const writes = this.writes;
    this.writes = [];
    try {
      // A write that fails quietly (a request log row never fails its request) may have ended the batch:
      // SQLite rolls the transaction back on SQLITE_FULL or an I/O error. COMMIT would say only
      // "no transaction is active"; the code says what happened (SQLite's own for this case).
      if (!this.db.inTransaction) throw batchLost();
      this.commitStmt.run();
    } catch (e) {
      // Nothing of the batch is in the database; the holds it took are gone with it, which leaves
      // every balance consistent (a settle that finds no hold charges without releasing one).
      if (this.db.inTransaction) this.db.run("ROLLBACK");
      this.watch.forget();
      this.untell();
      this.failing = e;
      for (const w of writes) {
        w.settled?.();
        w.reject?.(e);
      }
      return;
    }
    this.failing = null;
    this.onCommit?.(writes.length);
    // Before the waiters: a client that has its answer finds its request in the access log and metrics.
    try {
      this.tellCommitted();
    } finally {
      for (const w of writes) {
        w.settled?.();
        w.resolve?.(w.value);
      }
    }
  }

  private tellCommitted(): void {
    const tellers = this.tellers as ((row: unknown) => void)[];
    const told = this.told;
    try {
      for (let i = 0; i < told.length; i++) tellers[i]!(told[i]);
    } finally {
      this.untell();
    }
  }

  private untell(): void {
    this.tellers.length = 0;
    this.told.length = 0;
  }
}
