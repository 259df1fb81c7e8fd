import { migrate, openDatabase } from "../db/client.ts";
import { Idempotency } from "../limits/idempotency.ts";
import { RequestLog } from "../logs/request-log.ts";
import { Settings } from "../settings.ts";
import { parse, UsageError } from "./args.ts";
import { loadInstallation, openInstallation, output } from "./context.ts";
import { formatUsd } from "../ledger/money.ts";

export function migrateCommand(argv: string[]): void {
  const { values } = parse(argv, {});
  // Not openInstallation: it migrates on open, and this command reports how many it applied.
  const config = loadInstallation(values);
  const db = openDatabase(config.database);
  const applied = migrate(db);
  db.$client.close();
  output(values.json, { database: config.database, applied }, `applied ${applied} migration(s); ${config.database} is up to date`);
}

export function pauseCommand(argv: string[], on: boolean): void {
  const { values } = parse(argv, {});
  const ctx = openInstallation(values);
  new Settings(ctx.db).setPaused(on);
  output(values.json, { paused: on }, on ? "paused: key routes answer 503 product_paused" : "resumed: serving requests");
}

export function logsCommand(argv: string[]): void {
  const [sub, ...rest] = argv;
  const { values, positionals } = parse(rest, {});
  const ctx = openInstallation(values);
  const logs = new RequestLog(ctx.db);
  if (sub === "show") {
    const id = positionals[0];
    if (!id) throw new UsageError("usage: gateway logs show REQUEST_ID");
    const row = logs.show(id);
    if (!row) throw new UsageError(`no request ${id} in the log (kept 90 days)`);
    const view = { ...row, cost_usd: formatUsd(row.cost_nano as number), created_at: new Date(row.created_at as number).toISOString() };
    output(values.json, view, Object.entries(view).map(([k, v]) => `${k.padEnd(18)} ${v ?? "-"}`).join("\n"));
    return;
  }
  if (sub === "prune") {
    const removed = logs.prune();
    const idem = new Idempotency(ctx.db).prune();
    output(values.json, { removed, idempotency_removed: idem }, `removed ${removed} request log row(s) older than 90 days`);
    return;
  }
  throw new UsageError("usage: gateway logs show REQUEST_ID | logs prune");
}
