import { sql } from "drizzle-orm";
import type { PgDb } from "../engine/postgres/client.ts";
import { onPostgres } from "../engine/either.ts";
import { ReportsOn, type ReportsDialect } from "./queries.ts";

// The reports on PostgreSQL (`[database] url`): the queries of queries.ts on this engine's tables,
// the same rows and order as on SQLite.

const POSTGRES: ReportsDialect = {
  day: (createdAt) => sql<string>`to_char(to_timestamp(${createdAt} / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
};

export class PgLogReports extends ReportsOn {
  constructor(db: PgDb) {
    super(onPostgres(db), POSTGRES);
  }
}
