import type { Db } from "../engine/sqlite/client.ts";
import { onSqlite } from "../engine/either.ts";
import { AdminOn } from "./queries.ts";

/** The console's queries on SQLite, the embedded default: the statements of queries.ts, which read the same on both engines. */
export class AdminSqlite extends AdminOn {
  constructor(db: Db) {
    super(onSqlite(db));
  }
}
