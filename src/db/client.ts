import { Database } from "bun:sqlite";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import { createHash } from "node:crypto";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import * as schema from "./schema.ts";
import { embeddedMigrations } from "./migrations.gen.ts";

export type Db = BunSQLiteDatabase<typeof schema> & { $client: Database };

export function openDatabase(file: string): Db {
  if (file !== ":memory:") mkdirSync(dirname(file), { recursive: true });
  const sqlite = new Database(file, { create: true, strict: true });
  sqlite.exec("PRAGMA journal_mode = WAL");
  // Several processes (server, CLI) share the file; wait for the write lock instead of failing.
  sqlite.exec("PRAGMA busy_timeout = 5000");
  sqlite.exec("PRAGMA foreign_keys = ON");
  sqlite.exec("PRAGMA synchronous = NORMAL");
  return drizzle(sqlite, { schema }) as Db;
}

/** Applies the migrations compiled into the program; compatible with drizzle-kit's bookkeeping table. */
export function migrate(db: Db): number {
  const metas = embeddedMigrations.map((m) => ({
    sql: m.sql.split("--> statement-breakpoint"),
    bps: m.breakpoints,
    folderMillis: m.when,
    hash: createHash("sha256").update(m.sql).digest("hex"),
  }));
  const before = countApplied(db);
  // The dialect's migrate is what drizzle-orm/bun-sqlite/migrator calls after reading files from disk.
  (db as unknown as { dialect: { migrate: (m: unknown, s: unknown, c: unknown) => void }; session: unknown }).dialect.migrate(
    metas,
    (db as unknown as { session: unknown }).session,
    {},
  );
  return countApplied(db) - before;
}

function countApplied(db: Db): number {
  const row = db.$client
    .query("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = '__drizzle_migrations'")
    .get() as { n: number };
  if (row.n === 0) return 0;
  return (db.$client.query("SELECT count(*) AS n FROM __drizzle_migrations").get() as { n: number }).n;
}
