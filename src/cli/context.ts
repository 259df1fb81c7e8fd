import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { Keys } from "../auth/keys.ts";
import { buildCatalog, type Catalog } from "../catalog/catalog.ts";
import { loadConfig, type Config } from "../config/load.ts";
import { migrate, openDatabase, openDatabaseReadOnly, pendingMigrations, refuseNewerSchema, type Db } from "../db/client.ts";
import { Ledger } from "../ledger/ledger.ts";
import { Accounts, type AccountStore } from "../ledger/accounts.ts";
import { Audit, type AuditTrail } from "../logs/audit.ts";
import { Reports, type LogReports } from "../logs/queries.ts";
import { OperatorError } from "../core/operator-error.ts";
import { UsageError } from "./args.ts";

export interface CliContext {
  config: Config;
  /** The database file, as an absolute path: every command says which one it used. */
  database: string;
  db: Db;
  ledger: Ledger;
  keys: Keys;
  accounts: AccountStore;
  audit: AuditTrail;
  reports: LogReports;
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

/** The installation a command acts on: --config / GATEWAY_CONFIG; the database from --db, else GATEWAY_DB, else the config. */
export function loadInstallation(values: CommonValues): Config {
  const config = loadConfig(values.config ?? process.env.GATEWAY_CONFIG);
  const db = values.db ?? (process.env.GATEWAY_DB || undefined);
  if (db) config.database = db;
  return config;
}

/**
 * Only `gateway migrate` works on PostgreSQL so far: the ledger's PostgreSQL side (holds as rows,
 * cross-instance caches) is not built, and serving, or writing accounts into the SQLite file beside
 * a configured PostgreSQL, would be half of it (issue 18).
 */
export function refuseUnbuiltPostgres(config: Config): void {
  if (config.databaseUrl) {
    throw new OperatorError(`${config.source}: database.url is set, but serving from PostgreSQL is not built yet: only gateway migrate uses it so far (remove [database] url to serve from SQLite at ${config.database})`);
  }
}

/**
 * Opens an existing database: only `serve` and `migrate` create one, so a mistyped path is an error
 * naming it rather than a new empty installation. "read" opens it read-only and never migrates (it
 * works on a file the process may not write); "write" brings the schema up to date first.
 */
export function openInstallation(values: CommonValues, access: "read" | "write"): CliContext {
  const config = loadInstallation(values);
  refuseUnbuiltPostgres(config);
  const database = resolve(config.database);
  openedDatabase = database;
  if (!existsSync(database)) throw new UsageError(`no database at ${database} (gateway migrate or gateway serve creates one)`);
  let db: Db;
  try {
    if (access === "write") {
      db = openDatabase(database);
      migrate(db);
    } else {
      db = openDatabaseReadOnly(database);
      refuseNewerSchema(db);
      const pending = pendingMigrations(db);
      if (pending > 0) throw new UsageError(`${database} is ${pending} migration(s) behind this gateway: run gateway migrate first`);
    }
  } catch (e) {
    // "file is not a database", "unable to open database file": one line naming the file.
    if ((e as Error).name === "SQLiteError") throw new UsageError(`${database}: ${(e as Error).message}`);
    throw e;
  }
  let catalog: Catalog | undefined;
  const ledger = new Ledger(db);
  return {
    config,
    database,
    db,
    ledger,
    keys: new Keys(db),
    accounts: new Accounts(db, ledger),
    audit: new Audit(db),
    reports: new Reports(db),
    json: values.json ?? false, catalog: () => (catalog ??= buildCatalog(config)) };
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
