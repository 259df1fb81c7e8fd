import type { Db } from "../engine/sqlite/client.ts";
import { onSqlite } from "../engine/either.ts";
import { TwoFactorOn } from "./queries.ts";

/** Two-factor login's rows on SQLite: the statements of queries.ts, which read the same on both engines. */
export class TwoFactor extends TwoFactorOn {
  constructor(db: Db) {
    super(onSqlite(db));
  }
}
