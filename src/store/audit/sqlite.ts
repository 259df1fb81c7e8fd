import type { Db } from "../engine/sqlite/client.ts";
import { onSqlite } from "../engine/either.ts";
import { AuditOn } from "./queries.ts";

/** The audit log on SQLite, the embedded default: the statements of queries.ts. */
export class Audit extends AuditOn {
  constructor(db: Db) {
    super(onSqlite(db));
  }
}
