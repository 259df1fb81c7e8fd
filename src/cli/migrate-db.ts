import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { copyToPostgres, isPostgresUrl, openDatabaseReadOnly, pendingMigrations, redactUrl, refuseNewerSchema } from "../store/database.ts";
import { invocation, parse, required, UsageError } from "./args.ts";
import { loadInstallation, lockOutServe, output } from "./context.ts";

export const MIGRATE_DB_USAGE = `Usage:
  gateway migrate-db --from FILE --to postgres://USER:PASSWORD@HOST/DB

Moves an installation to PostgreSQL: applies the PostgreSQL migrations to the target, copies every
table of the SQLite file (ids kept) in one transaction, then proves the copy (row counts equal, every
balance equals its ledger sum, every key's spend its charges, nothing held) and commits only then.
A U+0000 character in a text value (which SQLite keeps and PostgreSQL's text refuses) is written as
U+FFFD; the report counts such values per column (nul_replaced).
--from defaults to the installation's database (--db, GATEWAY_DB, [server] database). Refused: a
missing file, a URL that is not postgres:// or postgresql://, a target that already holds rows, a
'gateway serve' running on the file (stop it first). Then set [database] url to the same URL and
start the instances (docs/scaling.md).`;

export async function migrateDbCommand(argv: string[]): Promise<void> {
  const { values } = parse(argv, { from: { type: "string" }, to: { type: "string" } });
  const to = required(values, "to");
  if (!isPostgresUrl(to)) throw new UsageError(`--to must be a postgres:// or postgresql:// URL, not ${redactUrl(to)}`);
  const from = resolve(values.from ?? loadInstallation(values).database);
  if (!existsSync(from)) throw new UsageError(`no database at ${from} (--from names the SQLite file to copy)`);
  // Held for the whole copy: a server started meanwhile would move money the copy has already passed.
  const lock = lockOutServe(from, "copying a live database would miss the money its requests move during the copy");
  try {
    const source = openDatabaseReadOnly(from);
    try {
      refuseNewerSchema(source);
      const pending = pendingMigrations(source);
      if (pending > 0) throw new UsageError(`${from} is ${pending} migration(s) behind this gateway: run ${invocation()} migrate --db ${from} first`);
      const tables = await copyToPostgres(source, to);
      const target = redactUrl(to);
      const rows = Object.fromEntries(tables.map((t) => [t.table, t.rows]));
      const counts = tables.map((t) => `${t.table} ${t.rows}`).join(", ");
      const replaced = Object.fromEntries(tables.flatMap((t) => Object.entries(t.nulReplaced).map(([column, n]) => [`${t.table}.${column}`, n])));
      const said = Object.entries(replaced).map(([column, n]) => `${column} ${n}`).join(", ");
      output(
        { database: from, json: values.json ?? false },
        { from, to: target, proved: true, rows, nul_replaced: replaced },
        `copied to ${target} and proved (row counts, balances = ledger sums, key spend = charges, nothing held): ${counts}` +
          `${said ? `; U+0000 written as U+FFFD (PostgreSQL's text cannot hold it) in ${said} value(s)` : ""}; done`,
      );
    } finally {
      source.$client.close();
    }
  } finally {
    lock.release();
  }
}
