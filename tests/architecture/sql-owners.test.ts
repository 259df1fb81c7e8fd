import { describe, expect, it } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { getTableName, is } from "drizzle-orm";
import { PgTable } from "drizzle-orm/pg-core";
import { SQLiteTable } from "drizzle-orm/sqlite-core";
import * as pgSchema from "../../src/store/schema/postgres.ts";
import * as schema from "../../src/store/schema/sqlite.ts";

// docs/architecture.md, "Who owns which table's SQL": one module owns each table group's SQL, so a
// reader finds every statement on a table in one place. A text scan of src/: raw SQL naming a table,
// or a file importing a table of db/schema.ts for the query builder.

/** The files that may write SQL or query-builder calls on each table. */
const OWNERS: Record<string, string[]> = {
  // The ledger's share of api_keys is spent_nano, the key's money column (and the quota beside it).
  // The ledger's PostgreSQL statements are split by job: one request's reserve (postgres-reserve.ts) and post (postgres-post.ts), one turn's batches (postgres-batch.ts).
  // The lease (store/ledger/postgres-lease.ts) releases a silent instance's holds: their sums on the key and the account.
  api_keys: ["store/keys/sqlite.ts", "store/keys/postgres.ts", "store/ledger/sqlite.ts", "store/ledger/postgres.ts", "store/ledger/postgres-batch.ts", "store/ledger/postgres-post.ts", "store/ledger/postgres-reserve.ts", "store/ledger/postgres-lease.ts"],
  accounts: ["store/accounts/sqlite.ts", "store/accounts/postgres.ts", "store/ledger/sqlite.ts", "store/ledger/postgres.ts", "store/ledger/postgres-batch.ts", "store/ledger/postgres-post.ts", "store/ledger/postgres-reserve.ts", "store/ledger/postgres-lease.ts"],
  ledger_entries: ["store/accounts/sqlite.ts", "store/accounts/postgres.ts", "store/ledger/sqlite.ts", "store/ledger/postgres.ts", "store/ledger/postgres-batch.ts", "store/ledger/postgres-post.ts"],
  request_logs: ["store/request-log/sqlite.ts", "store/request-log/postgres.ts", "store/reports/queries.ts", "store/reports/summary-sqlite.ts", "store/reports/summary-postgres.ts"],
  idempotency_records: ["store/idempotency/sqlite.ts", "store/idempotency/postgres.ts"],
  settings: ["store/settings/sqlite.ts", "store/settings/postgres.ts"],
  sessions: ["store/sessions/queries.ts"],
  account_links: ["store/links/queries.ts"],
  email_verifications: ["store/accounts/sqlite.ts", "store/accounts/postgres.ts"],
  audit_log: ["store/audit/queries.ts"],
  checkout_sessions: ["store/checkouts/queries.ts", "store/checkouts/sqlite.ts", "store/checkouts/postgres.ts"],
  code_batches: ["store/codes/sqlite.ts", "store/codes/postgres.ts"],
  redemption_codes: ["store/codes/sqlite.ts", "store/codes/postgres.ts"],
  account_notes: ["store/admin/queries.ts"],
  two_factor: ["store/two-factor/queries.ts"],
  recovery_codes: ["store/two-factor/queries.ts"],
  login_challenges: ["store/two-factor/queries.ts"],
  // PostgreSQL only (store/schema/postgres.ts): the holds of running requests as rows, and the instances that
  // take them, heartbeat and release a silent one's; SQLite keeps holds in memory (store/ledger/holds.ts).
  holds: ["store/ledger/postgres.ts", "store/ledger/postgres-batch.ts", "store/ledger/postgres-post.ts", "store/ledger/postgres-reserve.ts", "store/ledger/postgres-lease.ts"],
  instances: ["store/ledger/postgres-lease.ts"],
};

/** Reads of another group's table, never writes. */
const JOINED_READS: Record<string, string[]> = {
  // The key lookup carries the account's disabled switch: one statement on the hot path (bench/RESULTS.md).
  "store/keys/rows.ts": ["accounts"],
  // A capped key create locks its account's row (FOR UPDATE, no write), so racing creates count in turn.
  "store/keys/postgres.ts": ["accounts"],
  // A session's lookup carries its account's disabled switch, as the key lookup does.
  "store/sessions/queries.ts": ["accounts"],
  // An in-flight claim is live while its instance heartbeats (the ledger deletes a silent one's row).
  "store/idempotency/postgres.ts": ["instances"],
  // Reports name the account's email and the key's prefix.
  "store/reports/queries.ts": ["accounts", "api_keys"],
  // A top-up's receipt names its top_up entry (number, payment id) and its account's address.
  "store/checkouts/queries.ts": ["ledger_entries", "accounts"],
  // The admin page's totals over the log and its account search (store/admin/).
  "store/admin/queries.ts": ["accounts", "request_logs"],
  // migrate-db's proof on the target: database.md's reconciliation query and the held sums. Its copy
  // writes every table, but through the schema's table objects (copyPlan), never by name: the one
  // writer outside the owners, into an empty database before any owner runs on it.
  "store/engine/copy-to-postgres.ts": ["accounts", "api_keys", "ledger_entries"],
};

const NOT_SCANNED = new Set(["store/schema/sqlite.ts", "store/engine/sqlite/migrations.gen.ts", "store/schema/postgres.ts", "store/engine/postgres/migrations.gen.ts"]);

const SRC = resolve(import.meta.dir, "../../src");

/** Table name by its export name in db/schema.ts and db/pg-schema.ts (the twins share their export names). */
const TABLES = new Map<string, string>(
  [...Object.entries(schema), ...Object.entries(pgSchema)].flatMap(([name, value]) => (is(value, SQLiteTable) || is(value, PgTable) ? [[name, getTableName(value)] as const] : [])),
);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith(".ts") ? [path] : [];
  });
}

// Comments name tables in prose; `//` inside a string (a URL) is left alone.
const withoutComments = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");

const CODE = new Map(
  sourceFiles(SRC)
    .map((file) => [relative(SRC, file), withoutComments(readFileSync(file, "utf8"))] as const)
    .filter(([file]) => !NOT_SCANNED.has(file)),
);

/** The tables of store/schema/sqlite.ts or store/schema/postgres.ts a file imports for the query builder, by export name. */
function importedTables(code: string): string[] {
  const found: string[] = [];
  // A type-only import (a contract naming a row's type, `typeof table.$inferSelect`) writes no SQL.
  for (const m of code.matchAll(/^import\s+\{([^}]*)\}\s+from\s+"(?:[^"]*\/)?schema\/(?:sqlite|postgres)\.ts"/gm)) {
    for (const part of m[1]!.split(",")) {
      const name = part.replace(/^\s*type\s+/, "").split(/\s+as\s+/)[0]!.trim();
      if (TABLES.has(name)) found.push(name);
    }
  }
  // A store written once for both engines (store/engine/either.ts) reaches either schema's tables as `t.<name>`.
  if (/^import\s+(?:type\s+)?\{[^}]*\bEither\b[^}]*\}\s+from\s+"(?:[^"]*\/)?engine\/either\.ts"/m.test(code)) {
    for (const use of code.matchAll(/\bt\.(\w+)/g)) if (TABLES.has(use[1]!)) found.push(use[1]!);
  }
  for (const m of code.matchAll(/^import\s+\*\s+as\s+(\w+)\s+from\s+"(?:[^"]*\/)?schema\/(?:sqlite|postgres)\.ts"/gm)) {
    for (const use of code.matchAll(new RegExp(`\\b${m[1]}\\.(\\w+)`, "g"))) if (TABLES.has(use[1]!)) found.push(use[1]!);
  }
  return found;
}

const sqlNaming = (table: string, verbs: string) => new RegExp(`\\b(?:${verbs})\\s+"?${table}\\b`, "i");
const READ_OR_WRITE = "FROM|JOIN|INTO|UPDATE|TABLE";
const WRITE = "INSERT\\s+(?:OR\\s+\\w+\\s+)?INTO|UPDATE|DELETE\\s+FROM";

/** The tables a file writes SQL or query-builder calls on. */
function tablesUsed(code: string): Set<string> {
  const used = new Set(importedTables(code).map((name) => TABLES.get(name)!));
  for (const table of TABLES.values()) if (sqlNaming(table, READ_OR_WRITE).test(code)) used.add(table);
  return used;
}

function writes(code: string, table: string): boolean {
  const exportName = [...TABLES].find(([, t]) => t === table)![0];
  return sqlNaming(table, WRITE).test(code) || new RegExp(`\\.(?:insert|update|delete)\\(\\s*${exportName}\\b`).test(code);
}

describe("the SQL of each table", () => {
  it("has owners named for every table of src/store/schema/sqlite.ts and src/store/schema/postgres.ts", () => {
    expect([...TABLES.values()].sort()).toEqual(Object.keys(OWNERS).sort());
  });

  it("is found by the scan in each of its owners", () => {
    const missing = Object.entries(OWNERS).flatMap(([table, owners]) => owners.filter((f) => !tablesUsed(CODE.get(f) ?? "").has(table)).map((f) => `${f}: ${table}`));
    expect(missing).toEqual([]);
  });

  it("is written nowhere but in its owners and the joined reads", () => {
    const strays: string[] = [];
    for (const [file, code] of CODE) {
      for (const table of tablesUsed(code)) {
        if (!OWNERS[table]!.includes(file) && !JOINED_READS[file]?.includes(table)) strays.push(`${file}: ${table}`);
      }
    }
    expect(strays).toEqual([]);
  });

  it("is only read by a joined read, never written", () => {
    const written = Object.entries(JOINED_READS).flatMap(([file, tables]) => tables.filter((t) => writes(CODE.get(file)!, t)).map((t) => `${file}: ${t}`));
    expect(written).toEqual([]);
  });
});

/** A statement run on the connection itself, or SQL text written out in a string (a string that is only the word, an HTTP method such as "DELETE", is none). */
const STATEMENT = /\$client\s*\.\s*(?:prepare|query|run|exec|transaction|begin|unsafe|reserve)\b|["'`]\s*(?:SELECT|INSERT|UPDATE|DELETE|PRAGMA|BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE|VACUUM)\b(?!["'`])/;

describe("statements on the database connection (SQLite, or Bun's SQL for PostgreSQL)", () => {
  it("run only in db/ and in the tables' owners", () => {
    const owners = new Set(Object.values(OWNERS).flat());
    const strays = [...CODE]
      .filter(([file, code]) => !file.startsWith("store/engine/") && !file.startsWith("store/commits/") && !owners.has(file) && STATEMENT.test(code))
      .map(([file]) => file);
    expect(strays).toEqual([]);
  });

  it("never come from the CLI, which calls the owners", () => {
    const strays = [...CODE]
      .filter(([file]) => file.startsWith("cli/"))
      .filter(([, code]) => STATEMENT.test(code) || /from\s+"(?:drizzle-orm[^"]*|[^"]*\/store\/schema\/(?:sqlite|postgres)\.ts)"/.test(code))
      .map(([file]) => file);
    expect(strays).toEqual([]);
  });
});
