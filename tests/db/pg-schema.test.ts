// The two schemas side by side, from drizzle's table objects: every SQLite table has its PostgreSQL
// twin with the same columns, nullability, defaults, keys, indexes and constraints, so that one
// owner module's statements mean the same on both. What PostgreSQL has beyond that is listed here.
import { describe, expect, it } from "bun:test";
import { getTableName, is } from "drizzle-orm";
import { getTableConfig as pgTableConfig, PgTable } from "drizzle-orm/pg-core";
import { getTableConfig as sqliteTableConfig, SQLiteTable } from "drizzle-orm/sqlite-core";
import * as pg from "../../src/store/schema/postgres.ts";
import * as sqlite from "../../src/store/schema/sqlite.ts";

/** PostgreSQL's own, for the holds of several instances (DESIGN.md "Scaling past one machine"). */
const PG_ONLY_TABLES = ["holds", "instances"];
const PG_ONLY_COLUMNS = ["accounts.held_nano", "api_keys.held_nano", "idempotency_records.instance_id"];
/** CHECKs where SQLite has a trigger on UPDATE (migration 0005), which PostgreSQL also applies to INSERT. */
// api_keys_budget: a CHECK added to SQLite's existing table would rebuild it; keys/rows.ts refuses the same there.
const PG_ONLY_CHECKS = [
  "accounts.accounts_balance_not_negative",
  "accounts.accounts_held_not_negative",
  "api_keys.api_keys_spent_not_negative",
  "api_keys.api_keys_held_not_negative",
  "api_keys.api_keys_budget",
];

interface Shape {
  columns: Record<string, { notNull: boolean; hasDefault: boolean; primary: boolean; unique: boolean }>;
  primaryKeys: string[][];
  indexes: Record<string, { columns: string[]; unique: boolean; partial: boolean }>;
  checks: string[];
  foreignKeys: string[];
}

type AnyConfig = ReturnType<typeof pgTableConfig> | ReturnType<typeof sqliteTableConfig>;

function shapeOf(config: AnyConfig): Shape {
  const columns: Shape["columns"] = {};
  for (const c of config.columns) {
    // An identity column is filled by PostgreSQL as a SQLite integer primary key is by its rowid.
    const identity = "generatedIdentity" in c && c.generatedIdentity !== undefined;
    columns[c.name] = { notNull: c.notNull, hasDefault: c.hasDefault || identity, primary: c.primary, unique: c.isUnique };
  }
  const indexes: Shape["indexes"] = {};
  for (const i of config.indexes) {
    const cfg = i.config as { name: string; columns: { name?: string }[]; unique: boolean; where?: unknown };
    indexes[cfg.name] = { columns: cfg.columns.map((c) => c.name ?? "?"), unique: cfg.unique, partial: cfg.where !== undefined };
  }
  return {
    columns,
    primaryKeys: config.primaryKeys.map((pk) => pk.columns.map((c) => c.name)),
    indexes,
    checks: config.checks.map((c) => c.name).sort(),
    foreignKeys: config.foreignKeys.map((fk) => {
      const ref = fk.reference();
      return `${ref.columns.map((c) => c.name).join(",")} -> ${getTableName(ref.foreignTable)}(${ref.foreignColumns.map((c) => c.name).join(",")})`;
    }).sort(),
  };
}

const sqliteTables = new Map<string, Shape>(Object.values(sqlite).flatMap((v) => (is(v, SQLiteTable) ? [[getTableName(v), shapeOf(sqliteTableConfig(v))] as const] : [])));
const pgTables = new Map<string, Shape>(Object.values(pg).flatMap((v) => (is(v, PgTable) ? [[getTableName(v), shapeOf(pgTableConfig(v))] as const] : [])));

/** The PostgreSQL table's shape without what is PostgreSQL's own. */
function pgShared(table: string): Shape {
  const shape = structuredClone(pgTables.get(table)!);
  for (const col of PG_ONLY_COLUMNS) if (col.startsWith(`${table}.`)) delete shape.columns[col.slice(table.length + 1)];
  shape.checks = shape.checks.filter((c) => !PG_ONLY_CHECKS.includes(`${table}.${c}`));
  return shape;
}

describe("the PostgreSQL schema beside the SQLite one", () => {
  it("has a twin of every SQLite table, plus holds and instances", () => {
    expect([...pgTables.keys()].sort()).toEqual([...sqliteTables.keys(), ...PG_ONLY_TABLES].sort());
  });

  for (const table of sqliteTables.keys()) {
    describe(table, () => {
      it("has the same columns, each as nullable, defaulted, primary and unique", () => {
        expect(pgShared(table).columns).toEqual(sqliteTables.get(table)!.columns);
      });

      it("has the same composite primary key, if any", () => {
        expect(pgShared(table).primaryKeys).toEqual(sqliteTables.get(table)!.primaryKeys);
      });

      it("has the same indexes, unique and partial ones alike", () => {
        expect(pgShared(table).indexes).toEqual(sqliteTables.get(table)!.indexes);
      });

      it("has the same CHECK constraints", () => {
        expect(pgShared(table).checks).toEqual(sqliteTables.get(table)!.checks);
      });

      it("has the same foreign keys", () => {
        expect(pgShared(table).foreignKeys).toEqual(sqliteTables.get(table)!.foreignKeys);
      });
    });
  }

  it("lists only PostgreSQL columns and checks that exist", () => {
    const missingColumns = PG_ONLY_COLUMNS.filter((c) => {
      const [table, column] = c.split(".") as [string, string];
      return !pgTables.get(table)?.columns[column];
    });
    const missingChecks = PG_ONLY_CHECKS.filter((c) => {
      const [table, check] = c.split(".") as [string, string];
      return !pgTables.get(table)?.checks.includes(check);
    });
    expect([...missingColumns, ...missingChecks]).toEqual([]);
  });

  it("keeps every money column and every time in bigint", () => {
    const narrow = [...Object.values(pg)].flatMap((v) =>
      is(v, PgTable)
        ? pgTableConfig(v).columns.filter((c) => /_nano$|_at$/.test(c.name) && c.getSQLType() !== "bigint").map((c) => `${getTableName(v)}.${c.name}`)
        : [],
    );
    expect(narrow).toEqual([]);
  });
});
