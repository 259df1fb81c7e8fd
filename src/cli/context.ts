import { existsSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { buildCatalog, type Catalog } from "../catalog/catalog.ts";
import { loadConfig, type Config, type LoadOptions } from "../config/load.ts";
import { acquireServeLock, migrate, openDatabase, openDatabaseReadOnly, openPostgres, pendingMigrations, postgresSchemaBehind, redactUrl, refuseNewerSchema, ServeLockError, type Db } from "../store/database.ts";
import { postgresOperatorStores, sqliteOperatorStores, type OperatorStores } from "../store/open.ts";
import { OperatorError } from "../core/operator-error.ts";
import { invocation, UsageError } from "./args.ts";

export interface CliContext extends OperatorStores {
  config: Config;
  /** The database file as an absolute path, or the PostgreSQL URL without its password: every command says which one it used. */
  database: string;
  json: boolean;
  catalog(): Catalog;
}

/** The file the running command opened, for an error SQLite raises later (a read-only file, a full disk). */
export let openedDatabase: string | null = null;

interface CommonValues {
  config?: string;
  db?: string;
  json?: boolean;
}

/**
 * The installation a command acts on: --config / GATEWAY_CONFIG; the database from --db, else
 * GATEWAY_DB, else the config. Only `serve` calls providers, so only it needs their secrets set
 * (`need: "secrets"`); every other command leaves an unset `${NAME}` in a secret field as written.
 */
export function loadInstallation(values: CommonValues, opts: { need?: "secrets" } = {}): Config {
  const load: LoadOptions = opts.need === "secrets" ? {} : { unsetSecrets: "keep" };
  const config = loadConfig(values.config ?? process.env.GATEWAY_CONFIG, process.env, load);
  const db = values.db ?? (process.env.GATEWAY_DB || undefined);
  if (db) config.database = db;
  return config;
}

/**
 * Opens an existing database: only `serve` and `migrate` create one, so a mistyped path is an error
 * naming it rather than a new empty installation. "read" opens it read-only and never migrates (it
 * works on a file the process may not write); "write" brings the schema up to date first.
 */
export async function openInstallation(values: CommonValues, access: "read" | "write"): Promise<CliContext> {
  const config = loadInstallation(values);
  if (config.databaseUrl) return openPostgresInstallation(config, values.json ?? false);
  const database = resolve(config.database);
  openedDatabase = database;
  if (!existsSync(database)) throw new UsageError(`no database at ${database} (${invocation()} migrate or ${invocation()} serve creates one)`);
  // SQLite's own word for a folder opened read-only is "disk I/O error".
  if (statSync(database).isDirectory()) throw new UsageError(`${database} is a folder, not a database file (--db, GATEWAY_DB or [server] database names the file)`);
  let db: Db;
  try {
    if (access === "write") {
      db = openDatabase(database);
      // A newer CLI than the server running on the file would change its tables under it, as `gateway migrate` would.
      const lock = pendingMigrations(db) > 0 ? lockOutServe(database, "this gateway's migrations would change tables its requests are using; or run the command with the server's own version") : null;
      try {
        migrate(db);
      } finally {
        lock?.release();
      }
    } else {
      db = openDatabaseReadOnly(database);
      refuseNewerSchema(db);
      const pending = pendingMigrations(db);
      if (pending > 0) throw new UsageError(`${database} is ${pending} migration(s) behind this gateway: run ${invocation()} migrate first`);
    }
  } catch (e) {
    // "file is not a database", "unable to open database file": one line naming the file.
    if ((e as Error).name === "SQLiteError") throw new UsageError(`${database}: ${(e as Error).message}`);
    throw e;
  }
  let catalog: Catalog | undefined;
  return {
    ...sqliteOperatorStores(config, db),
    config,
    database,
    json: values.json ?? false,
    catalog: () => (catalog ??= buildCatalog(config)),
  };
}

/**
 * The installation on PostgreSQL: the same owners' PostgreSQL sides. The schema must be current
 * (`gateway migrate`; an older one is refused by the first statement that misses a column, a newer
 * one here). The ledger takes no holds: the CLI credits, never reserves. The connections close when
 * the command's process exits.
 */
export async function openPostgresInstallation(config: Config, json: boolean): Promise<CliContext> {
  const url = config.databaseUrl!;
  const database = redactUrl(url);
  const pg = openPostgres(url, { max: 2 });
  const pending = await postgresSchemaBehind(pg, url);
  if (pending > 0) throw new UsageError(`${database} is ${pending} migration(s) behind this gateway: run ${invocation()} migrate first`);
  let catalog: Catalog | undefined;
  return {
    ...postgresOperatorStores(config, pg),
    config,
    database,
    json,
    catalog: () => (catalog ??= buildCatalog(config)),
  };
}

/**
 * The serve lock, for a command that must not run beside a `gateway serve` on the same file
 * (`migrate`, `migrate-db`): a running server is refused in one line saying why it must stop first.
 */
export function lockOutServe(database: string, why: string): { release(): void } {
  try {
    return acquireServeLock(database);
  } catch (e) {
    if (!(e instanceof ServeLockError)) throw e;
    throw new OperatorError(`a 'gateway serve' is running on ${database}: stop it first (${why})`);
  }
}

/**
 * Prints a result: for people, or as one JSON document with --json. The database used goes to
 * stderr either way, so stdout stays the result alone (and lists stay JSON arrays).
 */
export function output(ctx: Pick<CliContext, "database" | "json">, data: unknown, human: string): void {
  console.error(`gateway: database ${ctx.database}`);
  console.log(ctx.json ? JSON.stringify(data, null, 2) : human);
}

/** A report as CSV on stdout (the database used on stderr). */
export function outputCsv(ctx: Pick<CliContext, "database">, text: string): void {
  console.error(`gateway: database ${ctx.database}`);
  process.stdout.write(text);
}
