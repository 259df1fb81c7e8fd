import { SQL } from "bun";
import { sql } from "drizzle-orm";
import { drizzle, type BunSQLDatabase } from "drizzle-orm/bun-sql";
import { createHash } from "node:crypto";
import { OperatorError } from "../../../core/operator-error.ts";
import * as schema from "../../schema/postgres.ts";
import { embeddedMigrations } from "./migrations.gen.ts";
import { refuseIfNewer } from "../schema-age.ts";

// PostgreSQL through Drizzle on Bun's built-in SQL client (docs/decisions.md: no dependency, and it
// does transactions, prepared statements and LISTEN/NOTIFY). Only the migrator is here for now: the
// owners' PostgreSQL statements come with the ledger's interface.

export type PgDb = BunSQLDatabase<typeof schema> & { $client: SQL };

/** Is this `[database] url` a PostgreSQL one? The config accepts nothing else. */
export const isPostgresUrl = (url: string): boolean => /^postgres(?:ql)?:\/\//i.test(url);

/** The URL without its password, for messages and logs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return url.replace(/\/\/[^@/]*@/, "//***@");
  }
}

/** A pool on the URL; `max` connections (the migrator takes one, so its advisory lock holds). */
export function openPostgres(url: string, opts: { max?: number } = {}): PgDb {
  const client = new SQL({ url, max: opts.max ?? 10 });
  return drizzle({ client, schema }) as PgDb;
}

export async function closePostgres(db: PgDb): Promise<void> {
  await db.$client.close();
}

// Any constant: instances starting together take turns, so no two apply the same migration.
const MIGRATION_LOCK = 7_318_004_118;

/**
 * Applies the PostgreSQL migrations compiled into the program (drizzle's bookkeeping, in its
 * `drizzle` schema) and returns how many it applied. Opens one connection and closes it.
 */
export async function migratePostgres(url: string): Promise<number> {
  const db = openPostgres(url, { max: 1 });
  try {
    await db.execute(sql`SELECT pg_advisory_lock(${MIGRATION_LOCK})`);
    refuseIfNewer(redactUrl(url), await lastApplied(db), embeddedMigrations);
    const before = await countApplied(db);
    const metas = embeddedMigrations.map((m) => ({
      sql: m.sql.split("--> statement-breakpoint"),
      bps: m.breakpoints,
      folderMillis: m.when,
      hash: createHash("sha256").update(m.sql).digest("hex"),
    }));
    // What drizzle-orm/bun-sql/migrator calls after reading files from disk; it runs in one transaction.
    const internals = db as unknown as { dialect: { migrate(m: unknown, s: unknown, c: unknown): Promise<void> }; session: unknown };
    await internals.dialect.migrate(metas, internals.session, {});
    return (await countApplied(db)) - before;
  } catch (e) {
    throw pgOperatorError(e, url);
  } finally {
    await closePostgres(db);
  }
}

/** The embedded migrations made after the last one applied, as drizzle's migrator decides. */
export async function pendingPgMigrations(db: PgDb): Promise<number> {
  const last = (await lastApplied(db)) ?? 0;
  return embeddedMigrations.filter((m) => m.when > last).length;
}

/**
 * For a command that does not migrate: refuses a schema newer than this program (one line), and
 * answers how many migrations it is behind. A database that cannot be reached is one line too.
 */
export async function postgresSchemaBehind(db: PgDb, url: string): Promise<number> {
  try {
    refuseIfNewer(redactUrl(url), await lastApplied(db), embeddedMigrations);
    return await pendingPgMigrations(db);
  } catch (e) {
    throw pgOperatorError(e, url);
  }
}

async function hasBookkeeping(db: PgDb): Promise<boolean> {
  const rows = await db.execute<{ t: string | null }>(sql`SELECT to_regclass('drizzle.__drizzle_migrations')::text AS t`);
  return rows[0]?.t != null;
}

async function lastApplied(db: PgDb): Promise<number | null> {
  if (!(await hasBookkeeping(db))) return null;
  const rows = await db.execute<{ t: string | null }>(sql`SELECT max(created_at)::text AS t FROM drizzle.__drizzle_migrations`);
  return rows[0]?.t == null ? null : Number(rows[0].t);
}

async function countApplied(db: PgDb): Promise<number> {
  if (!(await hasBookkeeping(db))) return 0;
  const rows = await db.execute<{ n: number }>(sql`SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations`);
  return rows[0]!.n;
}

/** One line naming the database (its password left out) for the ways a URL fails to serve. */
export function pgOperatorError(e: unknown, url: string): Error {
  if (e instanceof OperatorError) return e;
  // Drizzle wraps the client's error in "Failed query: <sql>"; the reason is its cause.
  const err = ((e as { cause?: unknown }).cause ?? e) as { code?: string; message?: string };
  const message = (err.message ?? String(err)).split("\n")[0]!;
  return new OperatorError(`the PostgreSQL database ${redactUrl(url)}: ${message}${err.code ? ` (${err.code})` : ""}`);
}
