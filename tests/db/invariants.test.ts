import { afterAll, describe, expect, it } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrate, openDatabase } from "../../src/store/engine/sqlite/client.ts";

// docs/database.md, Invariants: what the schema itself refuses, whoever writes (the server, the CLI,
// an operator's sqlite3).
const dir = mkdtempSync(join(tmpdir(), "gw-invariants-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const db = openDatabase(join(dir, "gateway.db"));
migrate(db);
const sql = db.$client;
sql.run("INSERT INTO accounts (email, balance_nano, created_at) VALUES ('a@test.local', 100, 1)");
sql.run("INSERT INTO api_keys (account_id, prefix, key_hash, created_at) VALUES (1, 'gk_sk_x', 'h', 1)");
const entry = (kind: string, amount: number, shortfall = 0) =>
  sql.run("INSERT INTO ledger_entries (account_id, kind, amount_nano, shortfall_nano, created_at) VALUES (1, ?, ?, ?, 1)", [kind, amount, shortfall]);

describe("ledger entries", () => {
  it("take only the known kinds", () => {
    expect(() => entry("gift", 5)).toThrow("CHECK constraint failed");
  });
  it("are positive for credits", () => {
    expect(() => entry("top_up", -5)).toThrow("CHECK constraint failed");
    expect(() => entry("operator_credit", 0)).toThrow("CHECK constraint failed");
    expect(() => entry("registration_credit", 5)).not.toThrow();
  });
  it("are zero or negative for charges, negative for debits", () => {
    expect(() => entry("charge", 5)).toThrow("CHECK constraint failed");
    expect(() => entry("charge", 0, 30)).not.toThrow();
    expect(() => entry("operator_debit", 0)).toThrow("CHECK constraint failed");
  });
  it("never record a negative shortfall", () => {
    expect(() => entry("charge", -1, -1)).toThrow("CHECK constraint failed");
  });
  it("are never updated or deleted", () => {
    entry("top_up", 7);
    expect(() => sql.run("UPDATE ledger_entries SET amount_nano = 8 WHERE kind = 'top_up'")).toThrow("append-only");
    expect(() => sql.run("DELETE FROM ledger_entries")).toThrow("append-only");
  });
});

describe("balances and spend", () => {
  it("never go below zero", () => {
    expect(() => sql.run("UPDATE accounts SET balance_nano = -1 WHERE id = 1")).toThrow("below zero");
    expect(() => sql.run("UPDATE api_keys SET spent_nano = -1 WHERE id = 1")).toThrow("below zero");
    expect(() => sql.run("UPDATE accounts SET balance_nano = 0 WHERE id = 1")).not.toThrow();
  });
});
