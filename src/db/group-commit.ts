import type { Database } from "bun:sqlite";

interface Queued {
  fn: () => unknown;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * Group commit for the per-request writes (reserve, settle + request log row). Writes queued in the
 * same turn of the event loop run in one IMMEDIATE transaction, each in its own savepoint, so one
 * failing write rolls back alone. Callers await the commit before they answer, so nothing a client
 * has seen is lost on a crash; in exchange a batch of n requests writes the shared pages (account,
 * key, index leaves) and pays the WAL commit once instead of n times (bench/RESULTS.md).
 */
export class GroupCommit {
  private queue: Queued[] = [];
  private scheduled = false;
  private readonly one: (fn: () => unknown) => unknown;
  private readonly all: { immediate(batch: Queued[]): unknown[] };

  constructor(db: Database) {
    // Nested inside `all`, bun:sqlite runs `one` as a SAVEPOINT.
    this.one = db.transaction((fn: () => unknown) => fn());
    this.all = db.transaction((batch: Queued[]) =>
      batch.map((q) => {
        try {
          return { ok: true, value: this.one(q.fn) };
        } catch (error) {
          return { ok: false, error };
        }
      }),
    );
  }

  /** Runs `fn` (synchronous SQLite work) in the next group transaction; settles once it is committed. */
  run<T>(fn: () => T): Promise<T> {
    const { promise, resolve, reject } = Promise.withResolvers<T>();
    this.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject });
    if (!this.scheduled) {
      this.scheduled = true;
      // After the I/O callbacks of this turn: every request that got this far in it joins the batch.
      setImmediate(() => this.flush());
    }
    return promise;
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.queue;
    this.queue = [];
    let results: unknown[];
    try {
      results = this.all.immediate(batch);
    } catch (e) {
      // BEGIN or COMMIT failed: nothing of the batch is in the database.
      for (const q of batch) q.reject(e);
      return;
    }
    batch.forEach((q, i) => {
      const r = results[i] as { ok: boolean; value?: unknown; error?: unknown };
      if (r.ok) q.resolve(r.value);
      else q.reject(r.error);
    });
  }
}
