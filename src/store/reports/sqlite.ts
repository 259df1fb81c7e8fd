import { sql } from "drizzle-orm";
import type { Db } from "../engine/sqlite/client.ts";
import { onSqlite } from "../engine/either.ts";
import { ReportsOn, type ReportsDialect } from "./queries.ts";

// The reports on SQLite, the embedded default: the queries of queries.ts on this engine's tables.

const SQLITE: ReportsDialect = {
  day: (createdAt) => sql<string>`date(${createdAt} / 1000, 'unixepoch')`,
};

export class Reports extends ReportsOn {
  constructor(db: Db) {
    super(onSqlite(db), SQLITE);
  }
}
