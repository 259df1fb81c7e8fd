import { afterEach, beforeEach, describe, expect, it } from "bun:test";
import { KEY_PREFIX } from "../../src/store/keys/contract.ts";
import { Keys } from "../../src/store/keys/sqlite.ts";
import { migrate, openDatabase, type Db } from "../../src/store/engine/sqlite/client.ts";
import { createAccount } from "../../src/store/accounts/sqlite.ts";
import { Ledger } from "../../src/store/ledger/sqlite.ts";

// The keys' cold reads that the CLI calls (auth/keys.ts owns api_keys: docs/architecture.md).

let db: Db;
let keys: Keys;
let accountId: number;
beforeEach(() => {
  db = openDatabase(":memory:");
  migrate(db);
  keys = new Keys(db);
  accountId = createAccount(db, new Ledger(db), "owner@keys.test").id;
});
afterEach(() => db.$client.close());

describe("Keys.find", () => {
  it("matches a key by its visible prefix, with or without gk_sk_", () => {
    const { record } = keys.create(accountId);
    expect(keys.find(record.prefix).map((k) => k.id)).toEqual([record.id]);
    expect(keys.find(record.prefix.slice(KEY_PREFIX.length, KEY_PREFIX.length + 4)).map((k) => k.id)).toEqual([record.id]);
  });

  it("matches a whole key by its hash, and a whole key nobody has by nothing", () => {
    const { key, record } = keys.create(accountId);
    expect(keys.find(key).map((k) => k.id)).toEqual([record.id]);
    expect(keys.find(`${KEY_PREFIX}${"A".repeat(40)}`)).toEqual([]);
  });
});

describe("Keys.countsByAccount", () => {
  it("counts revoked and expired keys as keys but not as active ones", () => {
    keys.create(accountId);
    keys.revoke(keys.create(accountId).record.id);
    const expiring = keys.create(accountId, { expiresAt: Date.now() + 60_000 }).record;
    expect(keys.countsByAccount(expiring.expiresAt! + 1).get(accountId)).toEqual({ keys: 3, active: 1 });
  });

  it("leaves out an account without keys", () => {
    const empty = createAccount(db, new Ledger(db), "empty@keys.test").id;
    expect(keys.countsByAccount().has(empty)).toBe(false);
  });
});

describe("Keys.row and Keys.ofAccount", () => {
  it("list an account's keys oldest first, with what each has spent", () => {
    const a = keys.create(accountId, { name: "a" }).record;
    const b = keys.create(accountId, { name: "b" }).record;
    expect(keys.ofAccount(accountId).map((k) => [k.id, k.name, k.spentNano])).toEqual([
      [a.id, "a", 0],
      [b.id, "b", 0],
    ]);
  });

  it("answer null and nothing for an unknown key or account", () => {
    expect(keys.row(999)).toBeNull();
    expect(keys.ofAccount(999)).toEqual([]);
  });
});

describe("Keys.revoke", () => {
  it("says whether the key was active until now, and null for an unknown id", () => {
    const { record } = keys.create(accountId);
    expect(keys.revoke(record.id)).toBe(true);
    expect(keys.revoke(record.id)).toBe(false);
    expect(keys.revoke(999)).toBeNull();
  });
});
