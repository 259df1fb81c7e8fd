import type { PgDb } from "./postgres/client.ts";
import type { Db } from "./sqlite/client.ts";
import * as pg from "../schema/postgres.ts";
import * as sqlite from "../schema/sqlite.ts";

// The cold stores whose statements read the same on both engines are written once, over `Either`.
// Drizzle has no type for "a database of either dialect": its SQLite and PostgreSQL builders take the
// same calls (select/from/join/where/orderBy/limit, insert/values, update/set/returning, awaited for
// their rows) but are typed apart. So the shared code is checked against PostgreSQL's types, and the
// SQLite side is handed over under them: the two schemas declare the same columns with the same
// JavaScript types (tests/db/pg-schema.test.ts), and every contract suite runs each case on both
// engines, which catches a call one dialect lacks. What differs per engine (SQLite's synchronous
// transactions, PostgreSQL's row locks, SQL functions) stays in the engine's own file.

/** One engine's database and tables, as the engine-generic stores see them. */
export interface Either {
  db: PgDb;
  t: typeof pg;
}

export const onPostgres = (db: PgDb): Either => ({ db, t: pg });

export const onSqlite = (db: Db): Either => ({ db: db as unknown as PgDb, t: sqlite as unknown as typeof pg });
