import { afterAll, afterEach, beforeAll, describe, expect, it, setDefaultTimeout, setSystemTime } from "bun:test";
import type { AccountStore } from "../../src/store/accounts/contract.ts";
import { accountStore, ENGINES, keyOf, stopEngines, type Opened } from "../support/ledger-engines.ts";

// One AccountStore, two implementations (ledger/accounts.ts on SQLite, ledger/pg-accounts.ts on
// PostgreSQL): every behaviour below holds on both, with the same results.

setDefaultTimeout(30_000);
const USD = 1_000_000_000;
const DAY = 24 * 3600 * 1000;
let seq = 0;
const email = () => `a${++seq}@accounts.test`;

/** A request charged `nano` at `at` (unix ms), through the ledger. */
async function chargeAt(o: Opened, accountId: number, keyId: number, nano: number, at: number): Promise<void> {
  setSystemTime(new Date(at));
  try {
    await (await o.ledger.reserve(`gw_s${++seq}`, accountId, keyId, nano)).post(nano);
  } finally {
    setSystemTime();
  }
}

afterAll(() => stopEngines());

for (const engine of ENGINES) {
  describe(`accounts on ${engine.name}`, () => {
    let o: Opened;
    let accounts: AccountStore;
    beforeAll(async () => {
      o = await engine.open();
      accounts = accountStore(o);
    });
    afterAll(() => o.close());
    afterEach(() => setSystemTime());

    it("creates an account with its email normalised and its starting credit as one registration_credit entry", async () => {
      const a = await accounts.create(`  Mixed${++seq}@Accounts.TEST `);
      expect(a.email).toBe(`mixed${seq}@accounts.test`);
      expect(a).toMatchObject({ balanceNano: USD, disabledAt: null, admin: false, lowBalanceNano: null });
      expect((await accounts.recentEntries(a.id, 10)).map((e) => [e.kind, e.amountNano, e.note])).toEqual([["registration_credit", USD, "starting balance"]]);
    });

    it("creates an account with the given opening balance, credit kind and admin flag, and none for a balance of 0", async () => {
      const a = await accounts.create(email(), { balanceNano: 3 * USD, kind: "operator_credit", admin: true });
      expect(a).toMatchObject({ balanceNano: 3 * USD, admin: true });
      expect((await accounts.recentEntries(a.id, 10)).map((e) => e.kind)).toEqual(["operator_credit"]);
      const empty = await accounts.create(email(), { balanceNano: 0 });
      expect(await accounts.recentEntries(empty.id, 10)).toEqual([]);
    });

    it("grants opening credits within the day's ceiling, exactly, to registrations made at once", async () => {
      const made = await Promise.all(Array.from({ length: 8 }, () => accounts.create(email(), { balanceNano: USD, dailyLimitNano: 5 * USD })));
      expect(made.map((a) => a.balanceNano).sort()).toEqual([0, 0, 0, USD, USD, USD, USD, USD]);
      const more = await accounts.create(email(), { balanceNano: USD, dailyLimitNano: 5 * USD });
      expect(more.balanceNano).toBe(0);
      expect(await accounts.recentEntries(more.id, 10)).toEqual([]);
    });

    it("counts each UTC day's registration credits on their own", async () => {
      setSystemTime(new Date("2031-03-04T23:59:59Z"));
      expect((await accounts.create(email(), { balanceNano: USD, dailyLimitNano: USD })).balanceNano).toBe(USD);
      expect((await accounts.create(email(), { balanceNano: USD, dailyLimitNano: USD })).balanceNano).toBe(0);
      setSystemTime(new Date("2031-03-05T00:00:00Z"));
      expect((await accounts.create(email(), { balanceNano: USD, dailyLimitNano: USD })).balanceNano).toBe(USD);
    });

    it("refuses a second account with the same email, in any case", async () => {
      const address = email();
      await accounts.create(address);
      await expect(async () => accounts.create(address.toUpperCase())).toThrow(`an account with email ${address} already exists`);
    });

    it("refuses an email that is not an address", async () => {
      await expect(async () => accounts.create("not-an-email")).toThrow("not an email address: not-an-email");
    });

    it("finds an account by email in any case and by id; an unknown one finds none", async () => {
      const a = await accounts.create(email());
      expect(await accounts.find(a.email.toUpperCase())).toEqual(a);
      expect(await accounts.findById(a.id)).toEqual(a);
      expect(await accounts.find("nobody@accounts.test")).toBeNull();
      expect(await accounts.findById(987_654)).toBeNull();
    });

    it("counts and lists the accounts oldest first, without their password hash", async () => {
      const before = await accounts.count();
      const a = await accounts.create(email(), { passwordHash: "secret-hash" });
      const b = await accounts.create(email());
      expect(await accounts.count()).toBe(before + 2);
      const list = await accounts.list();
      expect(list.slice(-2).map((x) => x.id)).toEqual([a.id, b.id]);
      expect(Object.keys(list.at(-2)!).sort()).toEqual(["admin", "balanceNano", "closedAt", "createdAt", "disabledAt", "email", "id", "lowBalanceNano"]);
    });

    it("lists an account's newest ledger entries first, at most the limit", async () => {
      const a = await accounts.create(email());
      await o.ledger.credit(a.id, 2 * USD, "operator_credit", "second");
      await accounts.debit(a.id, USD, "third");
      expect((await accounts.recentEntries(a.id, 2)).map((e) => [e.kind, e.amountNano, e.note])).toEqual([
        ["operator_debit", -USD, "third"],
        ["operator_credit", 2 * USD, "second"],
      ]);
    });

    it("debits with one operator_debit entry and answers the balance after it", async () => {
      const a = await accounts.create(email(), { balanceNano: 3 * USD });
      expect(await accounts.debit(a.id, USD, "correction")).toBe(2 * USD);
      expect((await o.ledger.balance(a.id)).balanceNano).toBe(2 * USD);
    });

    it("refuses a debit below zero, writing nothing", async () => {
      const a = await accounts.create(email(), { balanceNano: USD });
      await expect(async () => accounts.debit(a.id, 2 * USD, "too much")).toThrow("a debit of 2 USD would take the balance of 1 USD below zero");
      expect((await accounts.recentEntries(a.id, 10)).map((e) => e.kind)).toEqual(["registration_credit"]);
      expect((await accounts.findById(a.id))!.balanceNano).toBe(USD);
    });

    it("passes exactly ten of 30 debits of 0.1 USD made at once on 1 USD, the balance the sum of its entries", async () => {
      const a = await accounts.create(email(), { balanceNano: USD });
      const tries = await Promise.allSettled(Array.from({ length: 30 }, (_, i) => accounts.debit(a.id, USD / 10, `race ${i}`)));
      expect(tries.filter((t) => t.status === "fulfilled")).toHaveLength(10);
      const entries = await accounts.recentEntries(a.id, 100);
      expect(entries.filter((e) => e.kind === "operator_debit")).toHaveLength(10);
      expect((await accounts.findById(a.id))!.balanceNano).toBe(0);
      expect(entries.reduce((n, e) => n + e.amountNano, 0)).toBe(0);
    });

    it("refuses a debit of an account that does not exist", async () => {
      await expect(async () => accounts.debit(987_654, USD, "typo")).toThrow("no account with id 987654");
    });

    it("refuses a debit that is not a positive whole number of nano-dollars", async () => {
      const a = await accounts.create(email());
      await expect(async () => accounts.debit(a.id, 0, "nothing")).toThrow(RangeError);
      await expect(async () => accounts.debit(a.id, 1.5, "half")).toThrow(RangeError);
    });

    it("disables and enables an account, answering false when it already was so", async () => {
      const a = await accounts.create(email());
      expect(await accounts.setDisabled(a.id, true, 1_234)).toBe(true);
      expect(await accounts.setDisabled(a.id, true)).toBe(false);
      expect((await accounts.findById(a.id))!.disabledAt).toBe(1_234);
      expect(await accounts.setDisabled(a.id, false)).toBe(true);
      expect(await accounts.setDisabled(a.id, false)).toBe(false);
      expect((await accounts.findById(a.id))!.disabledAt).toBeNull();
    });

    it("makes an account admin and not, answering false when it already was so", async () => {
      const a = await accounts.create(email());
      expect(await accounts.setAdmin(a.id, true)).toBe(true);
      expect(await accounts.setAdmin(a.id, true)).toBe(false);
      expect((await accounts.profileOf(a.id))!.admin).toBe(true);
      expect(await accounts.setAdmin(a.id, false)).toBe(true);
    });

    it("sums each account's charges since a time, 0 for an account without any", async () => {
      const a = await accounts.create(email(), { balanceNano: 10 * USD });
      const b = await accounts.create(email());
      const key = await keyOf(o, a.id);
      await chargeAt(o, a.id, key, 100, Date.now() - 2 * DAY);
      await chargeAt(o, a.id, key, 20, Date.now() - 1000);
      await chargeAt(o, a.id, key, 3, Date.now());
      expect(await accounts.chargedSince([a.id, b.id], Date.now() - DAY)).toEqual(new Map([[a.id, 23], [b.id, 0]]));
    });

    it("reads a login by email or id, with its password hash and disabled switch", async () => {
      const a = await accounts.create(email(), { passwordHash: "hash-1" });
      expect(await accounts.findLogin(a.email.toUpperCase())).toEqual({ id: a.id, passwordHash: "hash-1", disabledAt: null });
      await accounts.setPasswordHash(a.id, "hash-2");
      expect(await accounts.loginOf(a.id)).toEqual({ id: a.id, passwordHash: "hash-2", disabledAt: null });
      expect(await accounts.findLogin("nobody@accounts.test")).toBeNull();
      expect(await accounts.loginOf(987_654)).toBeNull();
    });

    it("keeps the low-balance threshold of the profile, and clears it with null", async () => {
      const a = await accounts.create(email());
      await accounts.setLowBalanceThreshold(a.id, 250_000_000);
      expect((await accounts.profileOf(a.id))!.lowBalanceNano).toBe(250_000_000);
      await accounts.setLowBalanceThreshold(a.id, null);
      expect((await accounts.profileOf(a.id))!.lowBalanceNano).toBeNull();
      expect(await accounts.profileOf(987_654)).toBeNull();
    });

    it("refuses a negative or fractional low-balance threshold", async () => {
      const a = await accounts.create(email());
      await expect(async () => accounts.setLowBalanceThreshold(a.id, -1)).toThrow(RangeError);
      await expect(async () => accounts.setLowBalanceThreshold(a.id, 0.5)).toThrow(RangeError);
    });

    it("gives the statement's credits one by one and the charges summed per UTC day, newest first, a page at a time", async () => {
      const base = Date.UTC(2026, 0, 10, 12);
      setSystemTime(new Date(base - DAY));
      const a = await accounts.create(email(), { balanceNano: 10 * USD });
      setSystemTime();
      const key = await keyOf(o, a.id);
      await chargeAt(o, a.id, key, 10, base);
      await chargeAt(o, a.id, key, 20, base + 1000);
      setSystemTime(new Date(base + 2000));
      await o.ledger.credit(a.id, 5 * USD, "operator_credit", "by hand");
      await chargeAt(o, a.id, key, 30, base + DAY);
      const upTo = await accounts.newestLedgerId();
      const page = (before: { createdAt: number; id: number } | null, limit: number) => accounts.statementPage(a.id, upTo, before, limit);
      const whole = await page(null, 10);
      expect(whole.map((i) => [i.kind, i.amountNano, i.kind === "charges" ? [i.day, i.count] : i.note, i.createdAt])).toEqual([
        ["charges", -30, ["2026-01-11", 1], base + DAY],
        ["operator_credit", 5 * USD, "by hand", base + 2000],
        ["charges", -30, ["2026-01-10", 2], base + 1000],
        ["registration_credit", 10 * USD, "starting balance", base - DAY],
      ]);
      // Written after the first page: later pages go on as it saw the list.
      await chargeAt(o, a.id, key, 40, base + 1500);
      const pages = [await page(null, 1)];
      for (let i = 0; i < 3; i++) pages.push(await page(pages.at(-1)![0]!.at, 1));
      expect(pages.map((p) => p[0])).toEqual(whole);
      expect(await page(whole.at(-1)!.at, 1)).toEqual([]);
    });

    it("knows the newest ledger id of the whole database", async () => {
      const a = await accounts.create(email());
      const newest = (await accounts.recentEntries(a.id, 1))[0]!.id;
      expect(await accounts.newestLedgerId()).toBe(newest);
    });
  });
}

for (const engine of ENGINES) {
  describe(`accounts on ${engine.name}, beside running requests`, () => {
    let o: Opened;
    let accounts: AccountStore;
    beforeAll(async () => {
      o = await engine.open();
      accounts = accountStore(o);
    });
    afterAll(() => o.close());

    it("refuses a debit that would take the balance below what running requests hold, writing nothing", async () => {
      const a = await accounts.create(email(), { balanceNano: 3 * USD });
      await o.ledger.reserve("gw_held", a.id, await keyOf(o, a.id), 2 * USD);
      await expect(async () => accounts.debit(a.id, 2 * USD, "too much")).toThrow(
        "a debit of 2 USD would take the balance of 3 USD below the 2 USD held by running requests",
      );
      expect(await accounts.debit(a.id, USD, "fits")).toBe(2 * USD);
    });
  });
}

