import type { PgDb } from "../engine/postgres/client.ts";
import { onPostgres } from "../engine/either.ts";
import { SessionsOn } from "./queries.ts";

/** The sessions on PostgreSQL (`[database] url`): the statements of queries.ts, which read the same on both engines. */
export class PgSessions extends SessionsOn {
  constructor(db: PgDb, ttlMs: number, now?: () => number) {
    super(onPostgres(db), ttlMs, now);
  }
}
