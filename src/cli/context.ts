import { loadConfig, type Config } from "../config/load.ts";
import { migrate, openDatabase, type Db } from "../db/client.ts";
import { Keys } from "../auth/keys.ts";
import { Ledger } from "../ledger/ledger.ts";

export interface CliContext {
  config: Config;
  db: Db;
  ledger: Ledger;
  keys: Keys;
}

/** The installation a command acts on: --config / GATEWAY_CONFIG, and --db over the config's database. */
export function loadInstallation(values: { config?: string; db?: string }): Config {
  const config = loadConfig(values.config ?? process.env.GATEWAY_CONFIG);
  if (values.db) config.database = values.db;
  return config;
}

export function openInstallation(values: { config?: string; db?: string }): CliContext {
  const config = loadInstallation(values);
  const db = openDatabase(config.database);
  migrate(db);
  return { config, db, ledger: new Ledger(db), keys: new Keys(db) };
}

/** Prints a result for people, or as one JSON document with --json. */
export function output(json: boolean | undefined, data: unknown, human: string): void {
  console.log(json ? JSON.stringify(data, null, 2) : human);
}
