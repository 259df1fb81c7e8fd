// The two databases an owner's contract suite runs on: a migrated SQLite file, and a fresh migrated
// database on one throwaway PostgreSQL server per test file (started on first use). Each suite writes
// its behaviours once and runs them on both (`for (const engine of ENGINES)`); rows another owner
// writes (an account) are made with plain SQL through `run`, so the suite depends on one owner only.
// A file that opens any calls `afterAll(stopEngines)` at its top level: bun test loads this module
// once for every file of a run, so a hook registered here would stop the first file's server only
// and leave every later file's server running after the run.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrate, openDatabase, type Db } from "../../src/store/engine/sqlite/client.ts";
import { closePostgres, migratePostgres, openPostgres, type PgDb } from "../../src/store/engine/postgres/client.ts";
import { startPostgres, type TestPostgres } from "./postgres.ts";

export type Opened = { kind: "sqlite"; db: Db } | { kind: "pg"; db: PgDb };

export interface Engine {
  name: "SQLite" | "PostgreSQL";
  /** A fresh, migrated, empty database; closed after the file's tests. */
  open(): Promise<Opened>;
}

let pg: Promise<TestPostgres> | null = null;
let dbs = 0;
const closers: (() => Promise<void> | void)[] = [];

/** Closes what this file opened and stops its PostgreSQL server. */
export async function stopEngines(): Promise<void> {
  for (const close of closers.splice(0).reverse()) await close();
  if (pg) await (await pg).stop();
  pg = null;
}

export const SQLITE: Engine = {
  name: "SQLite",
  async open() {
    const dir = mkdtempSync(join(tmpdir(), "gw-engine-"));
    const db = openDatabase(join(dir, "gateway.db"));
    migrate(db);
    closers.push(() => (db.$client.close(), rmSync(dir, { recursive: true, force: true })));
    return { kind: "sqlite", db };
  },
};

/** The URL of a fresh, migrated, empty database on this file's PostgreSQL server (started on first use). */
export async function freshPostgresUrl(): Promise<string> {
  const server = await (pg ??= startPostgres());
  const url = await server.createDatabase(`owner_${process.pid}_${++dbs}`);
  await migratePostgres(url);
  return url;
}

export const POSTGRES: Engine = {
  name: "PostgreSQL",
  async open() {
    const db = openPostgres(await freshPostgresUrl());
    closers.push(() => closePostgres(db));
    return { kind: "pg", db };
  },
};

export const ENGINES = [SQLITE, POSTGRES];

/** Plain SQL with $1, $2… on either engine; PostgreSQL's bigint columns come back as text. */
export async function run(o: Opened, text: string, ...params: unknown[]): Promise<Record<string, unknown>[]> {
  if (o.kind === "pg") return [...(await o.db.$client.unsafe(text, params as never[]))];
  return o.db.$client.query(text.replace(/\$(\d+)/g, "?$1")).all(...(params as never[])) as Record<string, unknown>[];
}

let emails = 0;

/** An account row (the ledger's table), without money: what a key or a log row hangs on. */
export async function newAccount(o: Opened): Promise<number> {
  const [r] = await run(o, "INSERT INTO accounts (email, created_at) VALUES ($1, $2) RETURNING id", `e${process.pid}-${++emails}@test.local`, Date.now());
  return Number(r!.id);
}

/** The PostgreSQL database of an engine opened as POSTGRES. */
export function pgOf(o: Opened): PgDb {
  if (o.kind !== "pg") throw new Error("not a PostgreSQL database");
  return o.db;
}
