import type { PgDb } from "../engine/postgres/client.ts";
import { onPostgres } from "../engine/either.ts";
import { TwoFactorOn } from "./queries.ts";

/** Two-factor login's rows on PostgreSQL (`[database] url`): the statements of queries.ts, which read the same on both engines. */
export class PgTwoFactor extends TwoFactorOn {
  constructor(db: PgDb) {
    super(onPostgres(db));
  }
}
