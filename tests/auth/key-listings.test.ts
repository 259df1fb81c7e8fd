import { afterEach, beforeEach, describe, expect, it } from "bun:test";
import { KEY_PREFIX } from "../../src/store/keys/contract.ts";
import { Keys } from "../../src/store/keys/sqlite.ts";
import { migrate, openDatabase, type Db } from "../../src/store/engine/sqlite/client.ts";
import { Accounts } from "../../src/store/accounts/sqlite.ts";
import { Ledger } from "../../src/store/ledger/sqlite.ts";

// The keys' cold reads that the CLI calls (auth/keys.ts owns api_keys: docs/architecture.md).

let db: Db;
let keys: Keys;
let accountId: number;
beforeEach(async () => {
  db = openDatabase(":memory:");
  migrate(db);
  keys = new Keys(db);
  accountId = (await new Accounts(db, new Ledger(db)).create("owner@keys.test")).id;
});
afterEach(() => db.$client.close());

describe("Keys.find", async () => {
  it("matches a key by its visible prefix, with or without gk_sk_", async () => {
    const { record } = await keys.create(accountId);
    expect((await keys.find(record.prefix)).map((k) => k.id)).toEqual([record.id]);
    expect((await keys.find(record.prefix.slice(KEY_PREFIX.length, KEY_PREFIX.length + 4))).map((k) => k.id)).toEqual([record.id]);
  });

  it("matches a whole key by its hash, and a whole key nobody has by nothing", async () => {
    const { key, record } = await keys.create(accountId);
    expect((await keys.find(key)).map((k) => k.id)).toEqual([record.id]);
    expect(await keys.find(`${KEY_PREFIX}${"A".repeat(40)}`)).toEqual([]);
  });
});

describe("Keys.countsByAccount", async () => {
  it("counts revoked and expired keys as keys but not as active ones", async () => {
    await keys.create(accountId);
    await keys.revoke((await keys.create(accountId)).record.id);
    const expiring = (await keys.create(accountId, { expiresAt: Date.now() + 60_000 })).record;
    expect((await keys.countsByAccount(expiring.expiresAt! + 1)).get(accountId)).toEqual({ keys: 3, active: 1 });
  });

  it("leaves out an account without keys", async () => {
    const empty = (await new Accounts(db, new Ledger(db)).create("empty@keys.test")).id;
    expect((await keys.countsByAccount()).has(empty)).toBe(false);
  });
});

describe("Keys.row and Keys.ofAccount", async () => {
  it("list an account's keys oldest first, with what each has spent", async () => {
    const a = (await keys.create(accountId, { name: "a" })).record;
    const b = (await keys.create(accountId, { name: "b" })).record;
    expect((await keys.ofAccount(accountId)).map((k) => [k.id, k.name, k.spentNano])).toEqual([
      [a.id, "a", 0],
      [b.id, "b", 0],
    ]);
  });

  it("answer null and nothing for an unknown key or account", async () => {
    expect(await keys.row(999)).toBeNull();
    expect(await keys.ofAccount(999)).toEqual([]);
  });
});

describe("Keys.revoke", async () => {
  it("says whether the key was active until now, and null for an unknown id", async () => {
    const { record } = await keys.create(accountId);
    expect(await keys.revoke(record.id)).toBe(true);
    expect(await keys.revoke(record.id)).toBe(false);
    expect(await keys.revoke(999)).toBeNull();
  });
});
