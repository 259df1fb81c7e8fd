import { resolve } from "node:path";
import { migrate, migratePostgres, openDatabase, redactUrl } from "../store/database.ts";
import { parse } from "./args.ts";
import { loadInstallation, openInstallation, output } from "./context.ts";

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
  const db = openDatabase(database);
  const applied = migrate(db);
  db.$client.close();
  output({ database, json: values.json ?? false }, { database, applied }, `applied ${applied} migration(s); ${database} is up to date`);
}

export async function pauseCommand(argv: string[], on: boolean): Promise<void> {
  const { values } = parse(argv, {});
  const ctx = await openInstallation(values, "write");
  await (await ctx.settings()).setPaused(on);
  output(ctx, { paused: on }, on ? "paused: key routes answer 503 product_paused" : "resumed: serving requests");
}
