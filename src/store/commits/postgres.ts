import type { SQL } from "bun";
import type { Awaitable } from "../../core/awaitable.ts";
import type { Commits } from "./contract.ts";

// PostgreSQL needs no group commit: its own commits are cheap beside a network round trip, and
// several instances write at once. What is left of the contract: readiness, asked of the database.

/** How long GET /readyz waits for PostgreSQL before it says not ready. */
const PROBE_MS = 2000;

export class PgCommits implements Commits {
  constructor(private readonly sql: SQL) {}

  async run<T>(fn: () => Awaitable<T>): Promise<T> {
    return await fn();
  }

  /** Each write committed before its promise resolved: nothing is pending. */
  durable(): Promise<void> {
    return Promise.resolve();
  }

  now<T>(fn: () => T): T {
    return fn();
  }

  /** The database answers a statement within PROBE_MS (GET /readyz), else why not. */
  async writeRefusal(): Promise<unknown> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<Error>((resolve) => {
      timer = setTimeout(() => resolve(Object.assign(new Error(`no answer within ${PROBE_MS} ms`), { code: "ERR_POSTGRES_CONNECTION_TIMEOUT" })), PROBE_MS);
    });
    try {
      return await Promise.race([this.sql`SELECT 1`.then(() => null), late]);
    } catch (e) {
      return e;
    } finally {
      clearTimeout(timer);
    }
  }
}

