import type { Awaitable } from "../../core/awaitable.ts";

/**
 * How the server's per-request writes reach the database: on SQLite, the group commit
 * (sqlite.ts: the group commit, one transaction per event-loop turn); on PostgreSQL, each write is its own
 * statement or transaction on the pool (postgres.ts).
 */
export interface Commits {
  /** Runs `fn`'s writes; resolves with its result once they are durable. */
  run<T>(fn: () => Awaitable<T>): Promise<Awaitable<T>>;
  /**
   * Resolves once every write made so far is durable; rejects with the failure of the batch that held
   * one. On SQLite a write made outside `run` while a batch is open (an operator's credit, a
   * registration) joins that batch, and is gone if its COMMIT fails: a dashboard write is answered
   * only after this (http/session-guard.ts). Asked in the turn of the event loop the write was made
   * in (SQLite's stores answer without leaving it), it waits for that write's batch.
   */
  durable(): Promise<void>;
  /** Runs `fn`'s writes, whose loss in a crash would change nothing; the caller does not wait. */
  now<T>(fn: () => T): T;
  /** Why a write could not be taken now (GET /readyz), or null. */
  writeRefusal(): Awaitable<unknown>;
}
