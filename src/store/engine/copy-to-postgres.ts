import { getTableColumns, getTableName, is, sql, type Column } from "drizzle-orm";
import { getTableConfig as pgTableConfig, PgTable } from "drizzle-orm/pg-core";
import { SQLiteTable } from "drizzle-orm/sqlite-core";
import { NUL, withoutNul } from "../../core/nul.ts";
import { OperatorError } from "../../core/operator-error.ts";
import type { Db } from "./sqlite/client.ts";
import { migratePostgres, openPostgres, closePostgres, pgOperatorError, redactUrl, type PgDb } from "./postgres/client.ts";
import * as pgSchema from "../schema/postgres.ts";
import * as schema from "../schema/sqlite.ts";

// `gateway migrate-db`: an installation's SQLite file copied into an empty PostgreSQL database and
// proved there before it is committed. The tables come from the two schemas, never from a list kept
// here, so a table added to schema.ts is copied (or, without a PostgreSQL twin, refused) without
// anyone remembering this file.

/** One table to copy: the SQLite side read, the PostgreSQL side written, their shared columns by property name. */
export interface CopyStep {
  name: string;
  from: SQLiteTable;
  to: PgTable;
  columns: { key: string; from: Column; to: Column }[];
}

export interface CopyPlan {
  /** In an order where every table comes after the tables it references. */
  steps: CopyStep[];
  /** PostgreSQL's own tables (holds, instances): nothing to copy, and empty after the copy. */
  pgOnly: PgTable[];
}

export interface CopiedTable {
  table: string;
  rows: number;
  /** Per column, the values whose U+0000 were written as U+FFFD: PostgreSQL's text cannot hold the character. */
  nulReplaced: Record<string, number>;
}

const tablesOf = <T>(module: Record<string, unknown>, kind: abstract new (...a: never[]) => T): T[] =>
  Object.values(module).filter((v): v is T => is(v, kind as never));

/**
 * Pairs every SQLite table with its PostgreSQL twin, column by column. A table or column the copy
 * would leave behind is refused here, before anything is written: a move that silently drops data
 * is worse than one that does not start.
 */
export function copyPlan(sqliteTables: SQLiteTable[] = tablesOf(schema, SQLiteTable), pgTables: PgTable[] = tablesOf(pgSchema, PgTable)): CopyPlan {
  const twins = new Map(pgTables.map((t) => [getTableName(t), t]));
  const steps = new Map<string, CopyStep>();
  for (const from of sqliteTables) {
    const name = getTableName(from);
    const to = twins.get(name);
    if (!to) throw new OperatorError(`the table ${name} has no PostgreSQL twin in store/schema/postgres.ts: migrate-db would leave it behind, so it copies nothing`);
    const toColumns = getTableColumns(to);
    const columns = Object.entries(getTableColumns(from)).map(([key, column]) => {
      const twin = toColumns[key];
      if (!twin || twin.name !== column.name) {
        throw new OperatorError(`the column ${name}.${column.name} has no PostgreSQL twin in store/schema/postgres.ts: migrate-db would leave it behind, so it copies nothing`);
      }
      return { key, from: column, to: twin };
    });
    steps.set(name, { name, from, to, columns });
  }
  return { steps: dependencyOrder(steps), pgOnly: pgTables.filter((t) => !steps.has(getTableName(t))) };
}

/** The PostgreSQL foreign keys decide: they are the ones checked on every inserted row. */
function dependencyOrder(steps: Map<string, CopyStep>): CopyStep[] {
  const ordered: CopyStep[] = [];
  const visit = (step: CopyStep, path: string[]) => {
    if (ordered.includes(step)) return;
    if (path.includes(step.name)) throw new OperatorError(`the tables ${path.join(" → ")} reference each other in a cycle: no copy order exists`);
    for (const fk of pgTableConfig(step.to).foreignKeys) {
      const target = steps.get(getTableName(fk.reference().foreignTable));
      if (target && target !== step) visit(target, [...path, step.name]);
    }
    ordered.push(step);
  };
  for (const step of steps.values()) visit(step, []);
  return ordered;
}

/** The SQLite file's own tables that no table of schema.ts describes (a newer gateway's, a hand-made one). */
export function unknownSourceTables(source: Db, plan: CopyPlan): string[] {
  const known = new Set(plan.steps.map((s) => s.name));
  const rows = source.$client
    .query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name <> '__drizzle_migrations'")
    .all() as { name: string }[];
  return rows.map((r) => r.name).filter((n) => !known.has(n));
}

/** The SQLite file's columns of known tables that schema.ts does not describe (an operator's own), as table.column. */
export function unknownSourceColumns(source: Db, plan: CopyPlan): string[] {
  return plan.steps.flatMap((step) => {
    const known = new Set(step.columns.map((c) => c.from.name));
    const rows = source.$client.query("SELECT name FROM pragma_table_info(?)").all(step.name) as { name: string }[];
    return rows.filter((r) => !known.has(r.name)).map((r) => `${step.name}.${r.name}`);
  });
}

export interface CopyOptions {
  /** Rows per INSERT; a batch is all that is held in memory at once. */
  batchRows?: number;
}

/**
 * Migrates the target, then copies every table in one PostgreSQL transaction and proves the copy
 * inside it: any refusal or mismatch rolls the whole copy back. The source is read in one SQLite
 * read transaction, so the copy is one moment of the installation even if a CLI command writes meanwhile.
 */
export async function copyToPostgres(source: Db, url: string, opts: CopyOptions = {}): Promise<CopiedTable[]> {
  const plan = copyPlan();
  const stray = unknownSourceTables(source, plan);
  if (stray.length > 0) {
    throw new OperatorError(`${source.$client.filename} has tables this gateway does not know (${stray.join(", ")}): migrate-db would leave them behind, so it copies nothing`);
  }
  // The copy reads schema.ts's columns only: one added to the file by hand would be left behind unseen.
  const strayColumns = unknownSourceColumns(source, plan);
  if (strayColumns.length > 0) {
    throw new OperatorError(`${source.$client.filename} has columns this gateway does not know (${strayColumns.join(", ")}): migrate-db would leave them behind, so it copies nothing`);
  }
  await migratePostgres(url);
  const target = openPostgres(url, { max: 1 });
  source.$client.exec("BEGIN");
  try {
    return await target.transaction(async (tx) => {
      await refuseNonEmpty(tx as unknown as PgDb, plan, url);
      const copied: CopiedTable[] = [];
      for (const step of plan.steps) copied.push({ table: step.name, ...(await copyTable(source, tx as unknown as PgDb, step, opts.batchRows ?? 500)) });
      await restartIdentities(tx as unknown as PgDb, plan);
      await prove(source, tx as unknown as PgDb, plan, copied);
      return copied;
    });
  } catch (e) {
    throw pgOperatorError(e, url);
  } finally {
    source.$client.exec("COMMIT");
    await closePostgres(target);
  }
}

const countRows = async (db: PgDb, table: PgTable): Promise<number> =>
  (await db.execute<{ n: number }>(sql`SELECT count(*)::int AS n FROM ${table}`))[0]!.n;

async function refuseNonEmpty(db: PgDb, plan: CopyPlan, url: string): Promise<void> {
  const filled: string[] = [];
  for (const table of [...plan.steps.map((s) => s.to), ...plan.pgOnly]) {
    const n = await countRows(db, table);
    if (n > 0) filled.push(`${getTableName(table)}: ${n}`);
  }
  if (filled.length > 0) {
    throw new OperatorError(
      `the target ${redactUrl(url)} is not empty (${filled.join(", ")} rows): migrate-db copies into an empty database only, so it never mixes two installations' accounts; create a new database for it`,
    );
  }
}

async function copyTable(source: Db, db: PgDb, step: CopyStep, batchRows: number): Promise<Omit<CopiedTable, "table">> {
  const select = `SELECT ${step.columns.map((c) => `"${c.from.name}"`).join(", ")} FROM "${step.name}"`;
  let batch: Record<string, unknown>[] = [];
  let rows = 0;
  const nulReplaced: Record<string, number> = {};
  // iterate() steps the statement row by row: a large request_logs is never read whole.
  for (const row of source.$client.query(select).iterate() as Iterable<Record<string, unknown>>) {
    const out: Record<string, unknown> = {};
    for (const c of step.columns) {
      const value = row[c.from.name];
      let mapped = value === null ? null : c.from.mapFromDriverValue(value);
      // SQLite's text holds U+0000 (a row written before the gateway refused it); PostgreSQL's
      // refuses it, and one such value would refuse the whole copy. Written as U+FFFD, as the
      // PostgreSQL request log writes it, and counted for the report (docs/operations.md#moving-to-postgresql-gateway-migrate-db).
      if (typeof mapped === "string" && mapped.includes(NUL)) {
        mapped = withoutNul(mapped);
        nulReplaced[c.from.name] = (nulReplaced[c.from.name] ?? 0) + 1;
      }
      out[c.key] = mapped;
    }
    batch.push(out);
    if (batch.length >= batchRows) {
      await db.insert(step.to).values(batch as never);
      rows += batch.length;
      batch = [];
    }
  }
  if (batch.length > 0) await db.insert(step.to).values(batch as never);
  return { rows: rows + batch.length, nulReplaced };
}

/** Copied rows keep their ids, which the identity sequences did not hand out: the next insert must start past them. */
async function restartIdentities(db: PgDb, plan: CopyPlan): Promise<void> {
  for (const step of plan.steps) {
    for (const { to } of step.columns) {
      if ((to as { generatedIdentity?: unknown }).generatedIdentity === undefined) continue;
      const next = (await db.execute<{ n: string }>(sql`SELECT (COALESCE(max(${sql.identifier(to.name)}), 0) + 1)::text AS n FROM ${step.to}`))[0]!.n;
      // ALTER TABLE, not setval(): it is transactional, so a copy rolled back leaves the sequence as it was.
      await db.execute(sql`ALTER TABLE ${step.to} ALTER COLUMN ${sql.identifier(to.name)} RESTART WITH ${sql.raw(String(BigInt(next)))}`);
    }
  }
}

/** Thrown inside the transaction, so that the copy is rolled back; says what did not match. */
export class CopyMismatch extends OperatorError {}

async function prove(source: Db, db: PgDb, plan: CopyPlan, copied: CopiedTable[]): Promise<void> {
  const wrong: string[] = [];
  for (const step of plan.steps) {
    const expected = (source.$client.query(`SELECT count(*) AS n FROM "${step.name}"`).get() as { n: number }).n;
    const got = await countRows(db, step.to);
    const sent = copied.find((c) => c.table === step.name)!.rows;
    if (got !== expected || sent !== expected) wrong.push(`${step.name} has ${got} rows, the source ${expected}`);
  }
  for (const table of plan.pgOnly) {
    const n = await countRows(db, table);
    if (n > 0) wrong.push(`${getTableName(table)} has ${n} rows, expected none`);
  }
  wrong.push(...(await totalsDiffer(source, db)));
  wrong.push(...(await unbalanced(db)));
  if (wrong.length > 0) {
    const shown = wrong.slice(0, 5).join("; ") + (wrong.length > 5 ? `; and ${wrong.length - 5} more` : "");
    throw new CopyMismatch(`the copy does not match, so nothing was committed: ${shown}`);
  }
}

// A copy whose balances and ledger were altered alike would still reconcile: the money itself must equal the source's.
const TOTALS = `SELECT (SELECT COALESCE(SUM(balance_nano), 0) FROM accounts) AS balances,
  (SELECT COALESCE(SUM(amount_nano), 0) FROM ledger_entries) AS ledger,
  (SELECT COALESCE(SUM(spent_nano), 0) FROM api_keys) AS spent`;

async function totalsDiffer(source: Db, db: PgDb): Promise<string[]> {
  const before = source.$client.query(TOTALS).get() as Record<string, number>;
  const after = (await db.execute<Record<string, string>>(sql.raw(TOTALS)))[0]!;
  return Object.keys(before)
    .filter((k) => String(before[k]) !== String(after[k]))
    .map((k) => `the ${k} total ${after[k]} nano-USD, the source's ${before[k]}`);
}

/** docs/database.md's reconciliation query, and no money held: a stopped installation runs no request. */
async function unbalanced(db: PgDb): Promise<string[]> {
  const rows = await db.execute<{ what: string; id: string; stored: string; expected: string }>(sql`
    SELECT 'account' AS what, a.id::text AS id, a.balance_nano::text AS stored,
           (SELECT COALESCE(SUM(amount_nano), 0) FROM ledger_entries l WHERE l.account_id = a.id)::text AS expected
    FROM accounts a
    WHERE a.balance_nano != (SELECT COALESCE(SUM(amount_nano), 0) FROM ledger_entries l WHERE l.account_id = a.id)
    UNION ALL
    SELECT 'key', k.id::text, k.spent_nano::text,
           (SELECT COALESCE(-SUM(amount_nano), 0) FROM ledger_entries l WHERE l.key_id = k.id AND l.kind = 'charge')::text
    FROM api_keys k
    WHERE k.spent_nano != (SELECT COALESCE(-SUM(amount_nano), 0) FROM ledger_entries l WHERE l.key_id = k.id AND l.kind = 'charge')
    UNION ALL
    SELECT 'held by accounts', NULL, SUM(held_nano)::text, '0' FROM accounts HAVING SUM(held_nano) <> 0
    UNION ALL
    SELECT 'held by keys', NULL, SUM(held_nano)::text, '0' FROM api_keys HAVING SUM(held_nano) <> 0
    ORDER BY 1, 2`);
  return rows.map((r) =>
    r.id === null
      ? `${r.what}: ${r.stored} nano-USD, expected 0`
      : r.what === "account"
        ? `account ${r.id} has a balance of ${r.stored} nano-USD, its ledger sums to ${r.expected}`
        : `key ${r.id} has spent ${r.stored} nano-USD, its charges sum to ${r.expected}`,
  );
}
