import { Database, type Changes } from "bun:sqlite";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import { createHash } from "node:crypto";
import { accessSync, chmodSync, closeSync, constants, mkdirSync, openSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { OperatorError } from "../../../core/operator-error.ts";
import * as schema from "../../schema/sqlite.ts";
import { embeddedMigrations } from "./migrations.gen.ts";
import { refuseIfNewer } from "../schema-age.ts";

export type Db = BunSQLiteDatabase<typeof schema> & { $client: Database };

/**
 * Creates the folders a database file will live in (a first start in an empty folder, `--db
 * /var/lib/gateway/gateway.db`), or says in one line which folder cannot be made and why.
 */
export function ensureDatabaseFolder(file: string): void {
  if (file === ":memory:") return;
  const folder = dirname(resolve(file));
  try {
    // Owner-only when the gateway makes it (a folder that exists is the operator's and keeps its mode).
    mkdirSync(folder, { recursive: true, mode: DIR_MODE });
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw new OperatorError(`cannot create the folder ${folder} for the database ${file}: ${FS_REASONS[err.code ?? ""] ?? err.message}`);
  }
  // SQLite needs the folder itself, not only the file: the WAL, its index and the serve lock live beside it.
  try {
    accessSync(folder, constants.W_OK);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    const who = process.getuid ? ` (uid ${process.getuid()})` : "";
    throw new OperatorError(`the folder ${folder} of the database is not writable by this user${who}: ${FS_REASONS[err.code ?? ""] ?? err.message}`);
  }
}

// The database holds password, key and session hashes and stored idempotency answers: a first start
// made data/ 755 and gateway.db (and its -wal, -shm) 644, readable by every local user.
const DIR_MODE = 0o700;
const FILE_MODE = 0o600;

/** A new database file, created empty and owner-only before SQLite opens it: SQLite gives the -wal and -shm it makes later the main file's mode. */
function createOwnerOnly(file: string): void {
  try {
    closeSync(openSync(file, "wx", FILE_MODE));
  } catch {
    // There already (or not creatable: SQLite's own open says why).
  }
}

/**
 * An existing database, -wal or -shm open to other users loses their bits (0644 becomes 0600) once SQLite has
 * opened it as a database (a file that is not one is left as it is), with one line on stderr.
 */
function tightenDatabaseFiles(file: string): void {
  for (const f of [file, `${file}-wal`, `${file}-shm`]) {
    let mode: number;
    try {
      mode = statSync(f).mode & 0o777;
    } catch {
      continue;
    }
    if ((mode & 0o077) === 0) continue;
    // The owner's bits stay: a file the operator made read-only (0444) becomes 0400, not writable.
    const owner = (mode & 0o700).toString(8).padStart(3, "0");
    try {
      chmodSync(f, mode & 0o700);
      console.error(`gateway: ${f} was open to other users (mode ${mode.toString(8)}); set to ${owner} (it holds password, key and session hashes)`);
    } catch (e) {
      console.error(`gateway: ${f} is open to other users (mode ${mode.toString(8)}) and could not be set to ${owner}: ${(e as Error).message}`);
    }
  }
}

const FS_REASONS: Record<string, string> = {
  EACCES: "permission denied (the user running the gateway cannot write there)",
  EPERM: "operation not permitted",
  EROFS: "the file system is read-only",
  ENOTDIR: "a part of the path is a file, not a folder",
  ENOSPC: "no space left on the device",
};

/**
 * The server's wait for SQLite's write lock, on the JavaScript thread: short, because while it waits
 * nothing else runs (with 5 s, GET /status took 6 s behind an operator's long `sqlite3` write). Longer
 * locks are waited out between turns of the event loop (GroupCommit), then answered with 503.
 */
export const SERVER_BUSY_TIMEOUT_MS = 10;

/** `busyTimeoutMs`: how long a statement blocks for another process's lock; the CLI can afford seconds. */
export function openDatabase(file: string, opts: { busyTimeoutMs?: number } = {}): Db {
  ensureDatabaseFolder(file);
  const onDisk = file !== ":memory:";
  if (onDisk) createOwnerOnly(file);
  let sqlite: Database;
  try {
    sqlite = new Database(file, { create: true, strict: true });
    sqlite.exec("PRAGMA journal_mode = WAL");
  } catch (e) {
    throw new OperatorError(`cannot open the database ${file}: ${sqliteReason(e)}`);
  }
  if (onDisk) tightenDatabaseFiles(file);
  // Several processes (server, CLI) share the file; wait for the write lock instead of failing.
  sqlite.exec(`PRAGMA busy_timeout = ${opts.busyTimeoutMs ?? 5000}`);
  sqlite.exec("PRAGMA foreign_keys = ON");
  sqlite.exec("PRAGMA synchronous = NORMAL");
  return drizzle(sqlite, { schema }) as Db;
}

/**
 * Gives back the connection's page cache (up to 2 MiB by default) once a burst is over: the file's
 * pages stay in the OS's cache, so the next reads cost a copy, not a disk read.
 */
export function dropPageCache(db: Db): void {
  db.$client.exec("PRAGMA shrink_memory");
}

/**
 * Opens an existing database in SQLite's read-only mode, for the CLI's reports: openDatabase creates
 * the file and sets the journal mode, both writes, which a read-only file or user cannot do.
 */
export function openDatabaseReadOnly(file: string): Db {
  const sqlite = new Database(file, { readonly: true, strict: true });
  sqlite.exec("PRAGMA busy_timeout = 5000");
  sqlite.query("SELECT count(*) FROM sqlite_master").get(); // fails here if the file is not a database
  return drizzle(sqlite, { schema }) as Db;
}

/** How many rows a query builder's run() changed: bun:sqlite returns them, drizzle's types call the result void. */
export const changedRows = (result: unknown): number => (result as Changes).changes;

/** Applies the migrations compiled into the program; compatible with drizzle-kit's bookkeeping table. */
export function migrate(db: Db): number {
  refuseNewerSchema(db);
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

/** An older gateway refuses a database a newer one migrated (schema-age.ts). */
export function refuseNewerSchema(db: Db): void {
  refuseIfNewer(db.$client.filename, lastApplied(db), embeddedMigrations);
}

/** The embedded migrations made after the last one applied, as drizzle's migrator decides. */
export function pendingMigrations(db: Db): number {
  const last = lastApplied(db) ?? 0;
  return embeddedMigrations.filter((m) => m.when > last).length;
}

function lastApplied(db: Db): number | null {
  const has = db.$client.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '__drizzle_migrations'").get();
  if (!has) return null;
  return (db.$client.query("SELECT max(created_at) AS t FROM __drizzle_migrations").get() as { t: number | null }).t;
}

function countApplied(db: Db): number {
  const row = db.$client
    .query("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = '__drizzle_migrations'")
    .get() as { n: number };
  if (row.n === 0) return 0;
  return (db.$client.query("SELECT count(*) AS n FROM __drizzle_migrations").get() as { n: number }).n;
}

/** SQLite's own words for the common ways a file cannot serve as the database. */
function sqliteReason(e: unknown): string {
  const err = e as { code?: string; message?: string };
  if (err.code === "SQLITE_NOTADB") return "the file is not a SQLite database";
  if (err.code?.startsWith("SQLITE_CANTOPEN")) return "unable to open the file (check that the path is a file and that the folder is writable)";
  if (err.code?.startsWith("SQLITE_READONLY")) return "the file is read-only";
  return err.message ?? String(e);
}
