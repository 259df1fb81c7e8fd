import type { SQL } from "bun";
import type { Awaitable } from "../core/awaitable.ts";
import { databaseUnavailableCode } from "../core/errors.ts";
import type { Commits } from "./commits.ts";

// PostgreSQL needs no group commit: its own commits are cheap beside a network round trip, and
// several instances write at once. What is left of the contract: readiness follows the last write.

export class PgCommits implements Commits {
  /** The last write's failure when the database itself refused (down, full, read-only); null once one succeeds. */
  private failing: unknown = null;

  constructor(private readonly sql: SQL) {}

  async run<T>(fn: () => Awaitable<T>): Promise<T> {
    try {
      const value = await fn();
      this.failing = null;
      return value;
    } catch (e) {
      if (isUnavailable(e)) this.failing = e;
      throw e;
    }
  }

  now<T>(fn: () => T): T {
    const value = fn();
    if (value instanceof Promise) value.then(() => (this.failing = null), (e) => isUnavailable(e) && (this.failing = e));
    return value;
  }

  /** Ready when the last write went through, or, after a failure, as soon as the database answers again (probed in the background). */
  writeRefusal(): unknown {
    if (this.failing) void this.sql`SELECT 1`.then(() => (this.failing = null), () => {});
    return this.failing;
  }
}

const isUnavailable = (e: unknown) => databaseUnavailableCode(e) !== null;
