import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { hashKey, KEY_PREFIX, type KeyStore } from "../../src/store/keys/contract.ts";
import { Keys } from "../../src/store/keys/sqlite.ts";
import { PgKeys } from "../../src/store/keys/postgres.ts";
import { GatewayError } from "../../src/core/errors.ts";
import { ENGINES, stopEngines, newAccount, pgOf, POSTGRES, run, type Opened } from "../support/engines.ts";

// This file's databases and PostgreSQL server (support/engines.ts).
afterAll(stopEngines);

// One key store, two implementations: every behaviour below holds on SQLite and on PostgreSQL
// (never skipped: CI installs postgresql). SQLite's answers are the reference.

setDefaultTimeout(30_000);

const storeOn = (o: Opened): KeyStore => (o.kind === "sqlite" ? new Keys(o.db) : new PgKeys(o.db));
const noIp = { clientIp: () => null };

for (const engine of ENGINES) {
  describe(`keys on ${engine.name}`, () => {
    let o: Opened;
    let keys: KeyStore;
    beforeAll(async () => {
      o = await engine.open();
      keys = storeOn(o);
    });

    it("creates a gk_sk_ key whose record the lookup finds, with its restrictions", async () => {
      const accountId = await newAccount(o);
      const { key, record } = await keys.create(accountId, { name: "ci", quotaNano: 5_000, models: ["demo"], ipAllow: ["10.0.0.0/8"], rpm: 7, expiresAt: 4_102_444_800_000 });
      expect(key).toMatch(/^gk_sk_[A-Za-z0-9]{40}$/);
      expect(await keys.lookup(key)).toEqual(record);
      expect(record).toMatchObject({ accountId, name: "ci", prefix: key.slice(0, 12), quotaNano: 5_000, models: ["demo"], rpm: 7, expiresAt: 4_102_444_800_000, revokedAt: null, accountDisabledAt: null });
      expect(record.ipAllow).toHaveLength(1);
    });

    it("creates a key without restrictions as nulls and an empty name", async () => {
      const { record } = await keys.create(await newAccount(o));
      expect(record).toMatchObject({ name: "", quotaNano: null, models: null, ipAllow: null, rpm: null, expiresAt: null });
    });

    it("refuses to store a bad CIDR, an rpm below 1 or a fractional quota, writing nothing", async () => {
      const accountId = await newAccount(o);
      for (const bad of [{ ipAllow: ["10.0.0.0/99"] }, { rpm: 0 }, { quotaNano: 1.5 }]) {
        await expect(async () => keys.create(accountId, bad)).toThrow();
      }
      expect(await keys.ofAccount(accountId)).toEqual([]);
    });

    it("finds nothing for no key, a key not of our form, or an unknown key", async () => {
      expect(await keys.lookup(null)).toBeNull();
      expect(await keys.lookup("sk-somebody-else")).toBeNull();
      expect(await keys.lookup(`${KEY_PREFIX}${"A".repeat(40)}`)).toBeNull();
      expect(await keys.lookupHash(hashKey("nothing"))).toBeNull();
    });

    it("carries the account's disabled time in the lookup", async () => {
      const accountId = await newAccount(o);
      await run(o, "UPDATE accounts SET disabled_at = $1 WHERE id = $2", 1_000, accountId);
      const { key } = await keys.create(accountId);
      expect((await keys.lookup(key))!.accountDisabledAt).toBe(1_000);
    });

    it("updates the restrictions given, removes those given as null, and the next lookup sees it", async () => {
      const { key, record } = await keys.create(await newAccount(o), { name: "a", rpm: 5, models: ["demo"] });
      await keys.lookup(key);
      expect(await keys.update(record.id, { name: "b", models: null })).toBe(true);
      expect(await keys.lookup(key)).toMatchObject({ name: "b", rpm: 5, models: null });
    });

    it("answers an update of an unknown id with false, and an empty patch of a known one with true", async () => {
      const { record } = await keys.create(await newAccount(o));
      expect(await keys.update(987_654_321, { name: "x" })).toBe(false);
      expect(await keys.update(987_654_321, {})).toBe(false);
      expect(await keys.update(record.id, {})).toBe(true);
    });

    it("creates at most maxKeys keys for an account when 12 creates race, refusing the rest with key_limit", async () => {
      const accountId = await newAccount(o);
      const settled = await Promise.allSettled(Array.from({ length: 12 }, () => Promise.resolve().then(() => keys.create(accountId, {}, 5))));
      expect(settled.filter((r) => r.status === "fulfilled")).toHaveLength(5);
      const refusals = settled.flatMap((r) => (r.status === "rejected" ? [r.reason as GatewayError] : []));
      expect(refusals).toHaveLength(7);
      for (const e of refusals) expect(e).toMatchObject({ status: 409, code: "key_limit" });
      expect(await keys.ofAccount(accountId)).toHaveLength(5);
    });

    it("counts only keys not revoked against maxKeys, and caps nothing without it", async () => {
      const accountId = await newAccount(o);
      const first = await keys.create(accountId, {}, 2);
      await keys.create(accountId, {}, 2);
      await expect(async () => keys.create(accountId, {}, 2)).toThrow(GatewayError);
      await keys.revoke(first.record.id);
      await keys.create(accountId, {}, 2);
      // The operator's create gives no cap.
      await keys.create(accountId);
      expect(await keys.ofAccount(accountId)).toHaveLength(4);
    });

    it("revokes once: true, then false, null for an unknown id, and the next lookup sees the revocation", async () => {
      const { key, record } = await keys.create(await newAccount(o));
      await keys.lookup(key);
      expect(await keys.revoke(record.id, 2_000)).toBe(true);
      expect(await keys.revoke(record.id, 3_000)).toBe(false);
      expect(await keys.revoke(987_654_321)).toBeNull();
      expect((await keys.lookup(key))!.revokedAt).toBe(2_000);
    });

    it("gives a key's row with the stored columns, and null for an unknown id", async () => {
      const accountId = await newAccount(o);
      const { key, record } = await keys.create(accountId, { name: "r", quotaNano: 9 });
      const row = (await keys.row(record.id))!;
      expect(Object.keys(row).sort()).toEqual([
        "accountId",
        "budgetNano",
        "budgetPeriod",
        "budgetReachedAt",
        "createdAt",
        "expiresAt",
        "id",
        "ipAllow",
        "keyHash",
        "models",
        "name",
        "periodSpentNano",
        "periodStart",
        "prefix",
        "quotaNano",
        "revokedAt",
        "rpm",
        "spentNano",
      ]);
      expect(row).toMatchObject({ id: record.id, accountId, name: "r", keyHash: hashKey(key), quotaNano: 9, spentNano: 0, models: null, revokedAt: null });
      expect(typeof row.createdAt).toBe("number");
      expect(await keys.row(987_654_321)).toBeNull();
    });

    it("stores a budget with its period, gives it in the looked-up record, and removes it with null", async () => {
      const accountId = await newAccount(o);
      const { record } = await keys.create(accountId, { budget: { nano: 5, period: "week" } });
      expect(record.budget).toEqual({ nano: 5, period: "week" });
      expect(await keys.row(record.id)).toMatchObject({ budgetNano: 5, budgetPeriod: "week", periodStart: 0, periodSpentNano: 0, budgetReachedAt: null });
      expect(await keys.update(record.id, { budget: null })).toBe(true);
      expect(await keys.row(record.id)).toMatchObject({ budgetNano: null, budgetPeriod: null });
      await expect(Promise.resolve().then(() => keys.create(accountId, { budget: { nano: -1, period: "day" } }))).rejects.toThrow(RangeError);
    });

    it("lists an account's keys oldest first, and none of another account's", async () => {
      const accountId = await newAccount(o);
      const ids = [];
      for (const name of ["one", "two", "three"]) ids.push((await keys.create(accountId, { name })).record.id);
      await keys.create(await newAccount(o));
      expect((await keys.ofAccount(accountId)).map((r) => r.id)).toEqual(ids);
    });

    it("finds keys by their visible prefix, with or without gk_sk_, shorter or longer, and a whole key by its hash", async () => {
      const { key, record } = await keys.create(await newAccount(o));
      const ids = async (text: string) => (await keys.find(text)).map((r) => r.id);
      expect(await ids(key.slice(0, 12))).toContain(record.id);
      expect(await ids(key.slice(6, 12))).toContain(record.id);
      expect(await ids(key.slice(0, 9))).toContain(record.id);
      expect(await ids(key.slice(0, 20))).toContain(record.id);
      expect(await ids(key)).toEqual([record.id]);
      expect(await ids(`${KEY_PREFIX}${"Z".repeat(40)}`)).toEqual([]);
    });

    it("counts each account's keys and its active ones (neither revoked nor expired)", async () => {
      const accountId = await newAccount(o);
      const now = Date.now();
      await keys.create(accountId);
      await keys.revoke((await keys.create(accountId)).record.id);
      await keys.create(accountId, { expiresAt: now + 1_000 });
      const counts = await keys.countsByAccount(now + 2_000);
      expect(counts.get(accountId)).toEqual({ keys: 3, active: 1 });
      expect((await keys.countsByAccount(now)).get(accountId)).toEqual({ keys: 3, active: 2 });
    });

    it("checks a looked-up key: missing, unknown, revoked, disabled, expired and outside the allow-list are refused", async () => {
      const { key, record } = await keys.create(await newAccount(o), { ipAllow: ["10.0.0.0/8"] });
      const code = (f: () => unknown) => {
        try {
          f();
        } catch (e) {
          return (e as GatewayError).code;
        }
        return "accepted";
      };
      expect(code(() => keys.check(null, null, noIp))).toBe("no-key");
      expect(code(() => keys.check(key, null, noIp))).toBe("no-key");
      expect(code(() => keys.check(key, { ...record, revokedAt: 1 }, noIp))).toBe("inactive");
      expect(code(() => keys.check(key, { ...record, accountDisabledAt: 1 }, noIp))).toBe("inactive");
      expect(code(() => keys.check(key, { ...record, expiresAt: 5 }, noIp, 10))).toBe("expired");
      expect(code(() => keys.check(key, record, { clientIp: () => "192.168.1.1" }))).toBe("ip");
      expect(keys.check(key, record, { clientIp: () => "10.1.2.3" })).toBe(record);
    });
  });
}

describe("keys on PostgreSQL, the lookup's cache", () => {
  let o: Opened;
  let keys: PgKeys;
  beforeAll(async () => {
    o = await POSTGRES.open();
    keys = new PgKeys(pgOf(o));
  });

  it("answers a key looked up before at once, without a promise", async () => {
    const { key } = await keys.create(await newAccount(o));
    keys.forget();
    expect(keys.lookup(key)).toBeInstanceOf(Promise);
    const first = await keys.lookup(key);
    expect(keys.lookup(key)).toBe(first);
  });

  it("keeps no unknown key, so made-up keys never grow it", async () => {
    const made = `${KEY_PREFIX}${"B".repeat(40)}`;
    expect(await keys.lookup(made)).toBeNull();
    expect(keys.lookup(made)).toBeInstanceOf(Promise);
  });

  it("shares one read among concurrent lookups of a key not yet cached", async () => {
    const { key } = await keys.create(await newAccount(o));
    keys.forget();
    const [a, b] = [keys.lookup(key), keys.lookup(key)];
    expect(a).toBe(b);
  });

  it("serves the cached copy of another instance's revoke until forget(), then reads it", async () => {
    const { key, record } = await keys.create(await newAccount(o));
    await keys.lookup(key);
    const other = new PgKeys(pgOf(o));
    expect(await other.revoke(record.id, 4_000)).toBe(true);
    expect((keys.lookup(key) as { revokedAt: number | null }).revokedAt).toBeNull();
    keys.forget();
    expect((await keys.lookup(key))!.revokedAt).toBe(4_000);
  });

  it("does not keep what a read begun before forget() returns", async () => {
    const { key, record } = await keys.create(await newAccount(o));
    const reading = keys.lookup(key);
    keys.forget();
    await run(o, "UPDATE api_keys SET revoked_at = $1 WHERE id = $2", 5_000, record.id);
    await reading;
    expect((await keys.lookup(key))!.revokedAt).toBe(5_000);
  });

  it("rejects a lookup the database cannot answer, and caches nothing for it", async () => {
    const broken = new PgKeys({ $client: { unsafe: () => Promise.reject(new Error("connection refused")) } } as never);
    const presented = `${KEY_PREFIX}${"C".repeat(40)}`;
    await expect(async () => broken.lookup(presented)).toThrow("connection refused");
    await expect(async () => broken.lookup(presented)).toThrow("connection refused");
  });
});
