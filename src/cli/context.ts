import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { Keys } from "../store/keys/sqlite.ts";
import type { KeyStore } from "../store/keys/contract.ts";
import { PgKeys } from "../store/keys/postgres.ts";
import { buildCatalog, type Catalog } from "../catalog/catalog.ts";
import { loadConfig, type Config, type LoadOptions } from "../config/load.ts";
import { migrate, openDatabase, openDatabaseReadOnly, pendingMigrations, refuseNewerSchema, type Db } from "../store/engine/sqlite/client.ts";
import { openPostgres, postgresSchemaBehind, redactUrl } from "../store/engine/postgres/client.ts";
import { Accounts } from "../store/accounts/sqlite.ts";
import type { AccountStore } from "../store/accounts/contract.ts";
import { Ledger } from "../store/ledger/sqlite.ts";
import type { MoneyLedger } from "../store/ledger/contract.ts";
import { PgAccounts } from "../store/accounts/postgres.ts";
import { PgLedger } from "../store/ledger/postgres.ts";
import { Idempotency } from "../store/idempotency/sqlite.ts";
import type { IdempotencyStore } from "../store/idempotency/contract.ts";
import { PgIdempotency } from "../store/idempotency/postgres.ts";
import type { AuditTrail } from "../store/audit/contract.ts";
import { Audit } from "../store/audit/sqlite.ts";
import { PgAudit } from "../store/audit/postgres.ts";
import { PgLogReports } from "../store/reports/postgres.ts";
import { PgRequestLog } from "../store/request-log/postgres.ts";
import { Reports } from "../store/reports/sqlite.ts";
import type { LogReports } from "../store/reports/contract.ts";
import { RequestLog } from "../store/request-log/sqlite.ts";
import type { RequestLogStore } from "../store/request-log/contract.ts";
import { PgSettings } from "../store/settings/postgres.ts";
import type { SettingsStore } from "../store/settings/contract.ts";
import { Settings } from "../store/settings/sqlite.ts";
import { OperatorError } from "../core/operator-error.ts";
import { UsageError } from "./args.ts";

export interface CliContext {
  config: Config;
  /** The database file as an absolute path, or the PostgreSQL URL without its password: every command says which one it used. */
  database: string;
  /** The SQLite database, or null on PostgreSQL (`[database] url`). */
  db: Db | null;
  ledger: MoneyLedger;
  keys: KeyStore;
  accounts: AccountStore;
  audit: AuditTrail;
  reports: LogReports;
  requestLog: RequestLogStore;
  idempotency: IdempotencyStore;
  /** The pause switch and the estimator's rows. */
  settings(): Promise<SettingsStore>;
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
export function loadInstallation(values: CommonValues, opts: LoadOptions = {}): Config {
  const config = loadConfig(values.config ?? process.env.GATEWAY_CONFIG, process.env, opts);
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
    requestLog: new RequestLog(db, { retentionDays: config.logRetentionDays }),
    idempotency: new Idempotency(db),
    settings: async () => new Settings(db),
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
async function openPostgresInstallation(config: Config, json: boolean): Promise<CliContext> {
  const url = config.databaseUrl!;
  const database = redactUrl(url);
  const pg = openPostgres(url, { max: 2 });
  const pending = await postgresSchemaBehind(pg, url);
  if (pending > 0) throw new UsageError(`${database} is ${pending} migration(s) behind this gateway: run gateway migrate first`);
  const ledger = PgLedger.forOperator(pg.$client);
  let catalog: Catalog | undefined;
  return {
    config,
    database,
    db: null,
    ledger,
    keys: new PgKeys(pg),
    accounts: new PgAccounts(pg, ledger),
    audit: new PgAudit(pg),
    reports: new PgLogReports(pg),
    requestLog: new PgRequestLog(pg, { retentionDays: config.logRetentionDays }),
    idempotency: new PgIdempotency(pg, config.cluster.instanceId),
    settings: () => PgSettings.load(pg),
    json,
    catalog: () => (catalog ??= buildCatalog(config)),
  };
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
