import { resolve } from "node:path";
import { ensureDatabaseFolder, migrate, migratePostgres, openDatabase, redactUrl } from "../store/database.ts";
import { parse } from "./args.ts";
import { loadInstallation, lockOutServe, openInstallation, output } from "./context.ts";

export async function migrateCommand(argv: string[]): Promise<void> {
  const { values } = parse(argv, {});
  // Not openInstallation: migrate creates the database when there is none, and reports how many it applied.
  const config = loadInstallation(values);
  if (config.databaseUrl) {
    const database = redactUrl(config.databaseUrl);
    const applied = await migratePostgres(config.databaseUrl);
    output({ database, json: values.json ?? false }, { database, applied }, `applied ${applied} migration(s); ${database} is up to date`);
    return;
  }
  const database = resolve(config.database);
  ensureDatabaseFolder(database);
  // A server keeps its schema and statements from its start: tables changed under it would fail its
  // requests mid-way (docs/operations.md#upgrades), so the schema changes only while no server runs.
  const lock = lockOutServe(database, "it serves on the schema it started with; migrating under it would change tables its requests are using");
  let applied: number;
  try {
    const db = openDatabase(database);
    applied = migrate(db);
    db.$client.close();
  } finally {
    lock.release();
  }
  output({ database, json: values.json ?? false }, { database, applied }, `applied ${applied} migration(s); ${database} is up to date`);
}

export async function pauseCommand(argv: string[], on: boolean): Promise<void> {
  const { values } = parse(argv, {});
  const ctx = await openInstallation(values, "write");
  await (await ctx.settings()).setPaused(on);
  output(ctx, { paused: on }, on ? "paused: key routes answer 503 product_paused" : "resumed: serving requests");
}
