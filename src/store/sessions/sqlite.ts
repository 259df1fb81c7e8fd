import type { Db } from "../engine/sqlite/client.ts";
import { onSqlite } from "../engine/either.ts";
import { SessionsOn } from "./queries.ts";

/** The sessions on SQLite: the statements of queries.ts, which read the same on both engines. */
export class Sessions extends SessionsOn {
  constructor(db: Db, ttlMs: number, now?: () => number) {
    super(onSqlite(db), ttlMs, now);
  }
}
