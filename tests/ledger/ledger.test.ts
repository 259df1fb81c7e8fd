import { afterEach, beforeEach, describe, expect, it } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Keys } from "../../src/store/keys/sqlite.ts";
import { migrate, openDatabase, type Db } from "../../src/store/engine/sqlite/client.ts";
import { Accounts } from "../../src/store/accounts/sqlite.ts";
import { Ledger } from "../../src/store/ledger/sqlite.ts";
import { MAX_COST_NANO } from "../../src/ledger/hold.ts";
import { HoldResolvedTwice } from "../../src/ledger/hold.ts";
import { GroupCommit } from "../../src/store/commits/sqlite.ts";
import { refusal } from "../support/refusal.ts";

const USD = 1_000_000_000;

let dir: string;
let db: Db;
let ledger: Ledger;
let keys: Keys;
let seq = 0;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "gw-ledger-"));
  db = openDatabase(join(dir, "gateway.db"));
  migrate(db);
  ledger = new Ledger(db, new GroupCommit(db.$client));
  keys = new Keys(db);
});
afterEach(() => {
  db.$client.close();
  rmSync(dir, { recursive: true, force: true });
});

async function account(usd: number, quotaNano: number | null = null) {
  const acc = await new Accounts(db, ledger).create(`l${++seq}@test.local`, { balanceNano: usd * USD });
  const key = (await keys.create(acc.id, { quotaNano })).record;
  return { accountId: acc.id, keyId: key.id };
}
const keyRow = (id: number) => ({
  spent_nano: (db.$client.query("SELECT spent_nano FROM api_keys WHERE id = ?").get(id) as { spent_nano: number }).spent_nano,
  reserved_nano: ledger.holds.key(id),
});
const rows = (accountId: number) =>
  db.$client.query("SELECT kind, amount_nano, shortfall_nano, key_id, request_id FROM ledger_entries WHERE account_id = ? ORDER BY id").all(accountId) as {
    kind: string;
    amount_nano: number;
    shortfall_nano: number;
    key_id: number | null;
    request_id: string | null;
  }[];
const holds = () => ledger.holds.count;
describe("reserve", () => {
  it("holds the estimate on the account and the key, lowering spendable but not the balance", async () => {
    const a = await account(1);
    ledger.reserve("gw_r1", a.accountId, a.keyId, 300_000_000);
    expect(ledger.balance(a.accountId)).toEqual({ balanceNano: USD, reservedNano: 300_000_000, spendableNano: 700_000_000 });
    expect(keyRow(a.keyId).reserved_nano).toBe(300_000_000);
    expect(holds()).toBe(1);
  });

  it("refuses with 402 insufficient_balance when the estimate exceeds what is spendable, holding nothing", async () => {
    const a = await account(1);
    ledger.reserve("gw_r1", a.accountId, a.keyId, 600_000_000);
    const e = refusal(() => ledger.reserve("gw_r2", a.accountId, a.keyId, 500_000_000));
    expect([e.status, e.code]).toEqual([402, "insufficient_balance"]);
    expect(e.message).toContain("0.4 USD is spendable");
    expect(ledger.balance(a.accountId).reservedNano).toBe(600_000_000);
    expect(holds()).toBe(1);
  });

  it("allows a reservation of exactly the spendable amount", async () => {
    const a = await account(1);
    ledger.reserve("gw_r1", a.accountId, a.keyId, USD);
    expect(ledger.balance(a.accountId).spendableNano).toBe(0);
  });

  it("refuses with 429 quota and x-should-retry: false when spent + held + estimate exceeds the key's quota", async () => {
    const a = await account(10, 500_000_000);
    const h = ledger.reserve("gw_r1", a.accountId, a.keyId, 200_000_000);
    await h.post(200_000_000);
    ledger.reserve("gw_r2", a.accountId, a.keyId, 200_000_000);
    const e = refusal(() => ledger.reserve("gw_r3", a.accountId, a.keyId, 100_000_001));
    expect([e.status, e.code, e.type]).toEqual([429, "quota", "insufficient_quota"]);
    expect(e.headers["x-should-retry"]).toBe("false");
    expect(() => ledger.reserve("gw_r4", a.accountId, a.keyId, 100_000_000)).not.toThrow();
  });
});

describe("settle", () => {
  it("charges the actual cost, releases the whole hold and appends one charge row", async () => {
    const a = await account(1);
    const h = ledger.reserve("gw_s1", a.accountId, a.keyId, 300_000_000);
    expect(await h.post(120_000_000)).toEqual({ chargedNano: 120_000_000, shortfallNano: 0 });
    expect(ledger.balance(a.accountId)).toEqual({ balanceNano: 880_000_000, reservedNano: 0, spendableNano: 880_000_000 });
    expect(keyRow(a.keyId)).toEqual({ spent_nano: 120_000_000, reserved_nano: 0 });
    expect(rows(a.accountId).at(-1)).toEqual({ kind: "charge", amount_nano: -120_000_000, shortfall_nano: 0, key_id: a.keyId, request_id: "gw_s1" });
    expect(holds()).toBe(0);
  });

  it("caps the charge at the balance and records the rest as shortfall, never going negative", async () => {
    const a = await account(1);
    const h = ledger.reserve("gw_s2", a.accountId, a.keyId, 100_000_000);
    expect(await h.post(3_500_000_000)).toEqual({ chargedNano: USD, shortfallNano: 2_500_000_000 });
    expect(ledger.balance(a.accountId).balanceNano).toBe(0);
    expect(rows(a.accountId).at(-1)).toMatchObject({ kind: "charge", amount_nano: -USD, shortfall_nano: 2_500_000_000 });
  });

  it("charges nothing more once the balance is at zero, recording the whole cost as shortfall", async () => {
    const a = await account(1);
    const h1 = ledger.reserve("gw_a", a.accountId, a.keyId, 400_000_000);
    const h2 = ledger.reserve("gw_b", a.accountId, a.keyId, 400_000_000);
    await h1.post(2 * USD);
    expect(ledger.balance(a.accountId)).toEqual({ balanceNano: 0, reservedNano: 400_000_000, spendableNano: -400_000_000 });
    expect(await h2.post(300_000_000)).toEqual({ chargedNano: 0, shortfallNano: 300_000_000 });
    expect(ledger.balance(a.accountId)).toEqual({ balanceNano: 0, reservedNano: 0, spendableNano: 0 });
    expect(rows(a.accountId).at(-1)).toMatchObject({ amount_nano: 0, shortfall_nano: 300_000_000 });
  });

  it("writes no charge row for a zero cost", async () => {
    const a = await account(1);
    await ledger.reserve("gw_z", a.accountId, a.keyId, 1000).post(0);
    expect(rows(a.accountId).map((r) => r.kind)).toEqual(["registration_credit"]);
    expect(ledger.balance(a.accountId)).toEqual({ balanceNano: USD, reservedNano: 0, spendableNano: USD });
  });

  it("refuses a negative or NaN cost (a bug upstream of the ledger), charging nothing and letting the hold go", async () => {
    const a = await account(1);
    expect(ledger.reserve("gw_bad", a.accountId, a.keyId, 1000).post(-1)).rejects.toThrow(RangeError);
    expect(ledger.reserve("gw_nan", a.accountId, a.keyId, 1000).post(NaN)).rejects.toThrow(RangeError);
    await Bun.sleep(5);
    expect(holds()).toBe(0);
    expect(ledger.balance(a.accountId).balanceNano).toBe(USD);
  });

  it("rounds a fractional cost up to a whole nano-dollar", async () => {
    const a = await account(1);
    expect(await ledger.reserve("gw_half", a.accountId, a.keyId, 1000).post(0.5)).toEqual({ chargedNano: 1, shortfallNano: 0 });
  });

  // issue 14 item 2: an upstream reporting 10^12 tokens priced above 2^53 nano-USD threw before the hold was let go.
  it("caps a cost above 2^53 nano-dollars, charges what the balance allows, records the shortfall and lets the hold go", async () => {
    const a = await account(1);
    const h = ledger.reserve("gw_huge", a.accountId, a.keyId, 1000);
    expect(await h.post(3e18)).toEqual({ chargedNano: USD, shortfallNano: MAX_COST_NANO - USD });
    expect(holds()).toBe(0);
    expect(ledger.balance(a.accountId).balanceNano).toBe(0);
  });

  // issue 14 item 12: concurrent requests whose estimates undershoot could together spend past the quota.
  it("caps the charge at what is left of the key's quota, recording the rest as shortfall", async () => {
    const a = await account(10, 500_000_000);
    const h1 = ledger.reserve("gw_q1", a.accountId, a.keyId, 100_000_000);
    const h2 = ledger.reserve("gw_q2", a.accountId, a.keyId, 100_000_000);
    expect(await h1.post(400_000_000)).toEqual({ chargedNano: 400_000_000, shortfallNano: 0 });
    expect(await h2.post(400_000_000)).toEqual({ chargedNano: 100_000_000, shortfallNano: 300_000_000 });
    expect(keyRow(a.keyId).spent_nano).toBe(500_000_000);
  });
});

describe("release", () => {
  it("returns the hold to spendable and charges nothing", async () => {
    const a = await account(1);
    const h = ledger.reserve("gw_f", a.accountId, a.keyId, 300_000_000);
    h.void("test");
    expect(ledger.balance(a.accountId)).toEqual({ balanceNano: USD, reservedNano: 0, spendableNano: USD });
    expect(keyRow(a.keyId)).toEqual({ spent_nano: 0, reserved_nano: 0 });
    expect(rows(a.accountId)).toHaveLength(1);
  });

  it("throws on a second resolution, void or post, and changes nothing", async () => {
    const a = await account(1);
    const h = ledger.reserve("gw_f2", a.accountId, a.keyId, 300_000_000);
    h.void("test");
    expect(() => h.void("again")).toThrow(HoldResolvedTwice);
    expect(() => h.post(1000)).toThrow(HoldResolvedTwice);
    expect(ledger.balance(a.accountId)).toEqual({ balanceNano: USD, reservedNano: 0, spendableNano: USD });
    expect(keyRow(a.keyId).reserved_nano).toBe(0);
  });

  it("a posted hold cannot be voided, and close() after a post does nothing", async () => {
    const a = await account(1);
    const h = ledger.reserve("gw_f3", a.accountId, a.keyId, 300_000_000);
    await h.post(100_000_000);
    expect(() => h.void("late")).toThrow(HoldResolvedTwice);
    h.close();
    expect(ledger.balance(a.accountId).balanceNano).toBe(900_000_000);
  });

  it("close() voids a hold nobody resolved (the request's finally)", async () => {
    const a = await account(1);
    {
      using h = ledger.reserve("gw_f4", a.accountId, a.keyId, 300_000_000);
      expect(h.open).toBe(true);
    }
    expect(holds()).toBe(0);
  });
});

describe("holds belong to the process", () => {
  it("writes nothing to the database: a restart (a new ledger on the same file) starts with nothing held", async () => {
    const a = await account(1);
    ledger.reserve("gw_o1", a.accountId, a.keyId, 300_000_000);
    const restarted = new Ledger(db);
    expect(restarted.balance(a.accountId)).toEqual({ balanceNano: USD, reservedNano: 0, spendableNano: USD });
    expect(rows(a.accountId)).toHaveLength(1);
  });

  it("lets the hold go even when the settle's write fails, charging nothing", async () => {
    const a = await account(1);
    const h = ledger.reserve("gw_o2", a.accountId, a.keyId, 300_000_000);
    db.$client.exec("CREATE TRIGGER no_charges BEFORE INSERT ON ledger_entries BEGIN SELECT RAISE(ABORT, 'disk says no'); END");
    expect(h.post(50_000_000)).rejects.toThrow("disk says no");
    await Bun.sleep(5);
    expect(ledger.balance(a.accountId)).toEqual({ balanceNano: USD, reservedNano: 0, spendableNano: USD });
    expect(keyRow(a.keyId)).toEqual({ spent_nano: 0, reserved_nano: 0 });
  });
});

describe("credits", () => {
  it("adds money with a ledger row of its kind", async () => {
    const a = await account(1);
    expect(ledger.credit(a.accountId, 2 * USD, "top_up", "card")).toBe(true);
    expect(ledger.balance(a.accountId).balanceNano).toBe(3 * USD);
    expect(rows(a.accountId).map((r) => [r.kind, r.amount_nano])).toEqual([
      ["registration_credit", USD],
      ["top_up", 2 * USD],
    ]);
  });

  it("credits a payment event once however often it is delivered", async () => {
    const a = await account(1);
    expect(ledger.credit(a.accountId, USD, "top_up", null, "evt_1")).toBe(true);
    expect(ledger.credit(a.accountId, USD, "top_up", null, "evt_1")).toBe(false);
    expect(ledger.balance(a.accountId).balanceNano).toBe(2 * USD);
    expect(rows(a.accountId)).toHaveLength(2);
  });

  it("refuses zero, negative and fractional credits", async () => {
    const a = await account(1);
    for (const n of [0, -1, 1.5]) expect(() => ledger.credit(a.accountId, n, "operator_credit")).toThrow(RangeError);
  });
});

describe("balances and spend kept between requests", () => {
  const nextTurn = () => new Promise((r) => setImmediate(r));

  it("checks a reserve after a settle against the charged balance", async () => {
    const a = await account(1);
    await ledger.reserve("gw_k1", a.accountId, a.keyId, 600_000_000).post(600_000_000);
    expect(refusal(() => ledger.reserve("gw_k2", a.accountId, a.keyId, 600_000_000)).code).toBe("insufficient_balance");
  });

  it("checks a reserve after a settle against the key's spend", async () => {
    const a = await account(5, USD);
    await ledger.reserve("gw_k3", a.accountId, a.keyId, 600_000_000).post(600_000_000);
    expect(refusal(() => ledger.reserve("gw_k4", a.accountId, a.keyId, 600_000_000)).code).toBe("quota");
  });

  it("sees a top-up committed by another process from the next turn of the event loop on", async () => {
    const a = await account(1);
    expect(refusal(() => ledger.reserve("gw_k5", a.accountId, a.keyId, 3 * USD)).code).toBe("insufficient_balance");
    const cli = openDatabase(join(dir, "gateway.db"));
    new Ledger(cli).credit(a.accountId, 5 * USD, "operator_credit");
    cli.$client.close();
    await nextTurn();
    expect(() => ledger.reserve("gw_k6", a.accountId, a.keyId, 3 * USD)).not.toThrow();
  });

  it("sees a quota lowered by another process from the next turn of the event loop on", async () => {
    const a = await account(5);
    ledger.reserve("gw_k7", a.accountId, a.keyId, USD).void("test");
    const cli = openDatabase(join(dir, "gateway.db"));
    cli.$client.run("UPDATE api_keys SET quota_nano = ? WHERE id = ?", [USD / 2, a.keyId]);
    cli.$client.close();
    await nextTurn();
    expect(refusal(() => ledger.reserve("gw_k8", a.accountId, a.keyId, USD)).code).toBe("quota");
  });

  it("forgets a charge whose batch failed to commit", async () => {
    const a = await account(1);
    // A deferred constraint fails at COMMIT, after the settle has run: the whole batch rolls back.
    db.$client.exec("CREATE TABLE must_point (ref INTEGER REFERENCES accounts(id) DEFERRABLE INITIALLY DEFERRED)");
    const h = ledger.reserve("gw_k9", a.accountId, a.keyId, 600_000_000);
    const charged = h.post(600_000_000, () => db.$client.run("INSERT INTO must_point VALUES (999)"));
    expect(await charged.then(() => "committed", (e) => String(e))).toContain("FOREIGN KEY");
    expect(ledger.balance(a.accountId).balanceNano).toBe(USD);
    expect(() => ledger.reserve("gw_k10", a.accountId, a.keyId, 600_000_000)).not.toThrow();
  });
});

describe("a key's spend (GET /v1/me)", () => {
  it("is what the key was charged and what its running requests hold", async () => {
    const a = await account(1);
    await ledger.reserve("gw_ks1", a.accountId, a.keyId, 100_000_000).post(40_000_000);
    ledger.reserve("gw_ks2", a.accountId, a.keyId, 30_000_000);
    expect(ledger.keySpend(a.keyId)).toEqual({ spentNano: 40_000_000, reservedNano: 30_000_000, budget: null });
  });

  it("is null for a key that does not exist", () => {
    expect(ledger.keySpend(999)).toBeNull();
  });
});
