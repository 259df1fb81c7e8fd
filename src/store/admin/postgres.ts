import type { PgDb } from "../engine/postgres/client.ts";
import { onPostgres } from "../engine/either.ts";
import { AdminOn } from "./queries.ts";

/** The console's queries on PostgreSQL (`[database] url`): the statements of queries.ts, which read the same on both engines. */
export class PgAdmin extends AdminOn {
  constructor(db: PgDb) {
    super(onPostgres(db));
  }
}
