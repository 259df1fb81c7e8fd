import type { PgDb } from "../engine/postgres/client.ts";
import { onPostgres } from "../engine/either.ts";
import { AuditOn } from "./queries.ts";

/** The audit log on PostgreSQL (`[database] url`), the shared engine: the statements of queries.ts. */
export class PgAudit extends AuditOn {
  constructor(db: PgDb) {
    super(onPostgres(db));
  }
}
