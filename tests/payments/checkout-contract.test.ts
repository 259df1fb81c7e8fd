import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import type { CheckoutStore, TopUpCredit } from "../../src/store/checkouts/contract.ts";
import { Checkouts, SqliteTopUpCredit } from "../../src/store/checkouts/sqlite.ts";
import { PgCheckouts, PgTopUpCredit } from "../../src/store/checkouts/postgres.ts";
import type { AccountStore } from "../../src/store/accounts/contract.ts";
import { accountStore, ENGINES, stopEngines, type Opened } from "../support/ledger-engines.ts";

// The checkout sessions and a paid session's credit (store/checkouts/), one suite on both engines: the credit and the session
// marked credited are one transaction, once per session and per payment however the deliveries come.

setDefaultTimeout(30_000);
const USD = 1_000_000_000;
let seq = 0;
afterAll(() => stopEngines());

for (const engine of ENGINES) {
  describe(`top-ups on ${engine.name}`, () => {
    let o: Opened;
    let checkouts: CheckoutStore;
    let topUps: TopUpCredit;
    let accounts: AccountStore;
    beforeAll(async () => {
      o = await engine.open();
      accounts = accountStore(o);
      if (o.engine === "sqlite") {
        checkouts = new Checkouts(o.db);
        topUps = new SqliteTopUpCredit(o.db, o.ledger, o.commits);
      } else {
        const pg = new PgCheckouts(o.db);
        checkouts = pg;
        topUps = new PgTopUpCredit(o.ledger, pg);
      }
    });
    afterAll(() => o.close());

    /** An account without credit and a pending session of `usd` for it. */
    async function pending(usd = 5): Promise<{ accountId: number; id: string }> {
      const accountId = (await accounts.create(`t${++seq}@topups.test`, { balanceNano: 0 })).id;
      const id = `cs_test_${process.pid}_${++seq}`;
      await checkouts.record(id, accountId, usd * USD, 1_000 + seq);
      return { accountId, id };
    }

    const topUpEntries = async (accountId: number) =>
      (await accounts.recentEntries(accountId, 10)).filter((e) => e.kind === "top_up").map((e) => [e.amountNano, e.note, e.externalRef]);

    it("records a session pending with its amount, and finds it by id", async () => {
      const s = await pending(5);
      expect(await checkouts.find(s.id)).toEqual({ id: s.id, accountId: s.accountId, amountNano: 5 * USD, status: "pending", createdAt: 1_000 + seq, creditedAt: null });
      expect(await checkouts.find("cs_unknown")).toBeNull();
    });

    it("lists an account's sessions newest first, at most the limit", async () => {
      const s = await pending(1);
      await checkouts.record(`${s.id}_b`, s.accountId, 2 * USD, 5_000_000);
      await checkouts.record(`${s.id}_c`, s.accountId, 3 * USD, 6_000_000);
      expect((await checkouts.of(s.accountId)).map((c) => c.amountNano)).toEqual([3 * USD, 2 * USD, USD]);
      expect((await checkouts.of(s.accountId, 1)).map((c) => c.amountNano)).toEqual([3 * USD]);
    });

    it("credits a paid session's stored amount as a top_up naming the payment, and marks it credited", async () => {
      const s = await pending(5);
      expect(await topUps.credit((await checkouts.find(s.id))!, "pi_1")).toBeNull();
      expect(await topUpEntries(s.accountId)).toEqual([[5 * USD, `Stripe Checkout ${s.id}`, "pi_1"]]);
      expect((await o.ledger.balance(s.accountId)).balanceNano).toBe(5 * USD);
      const row = (await checkouts.find(s.id))!;
      expect(row.status).toBe("credited");
      expect(row.creditedAt).toBeNumber();
    });

    it("credits a session once when it is credited again", async () => {
      const s = await pending(5);
      const row = (await checkouts.find(s.id))!;
      expect(await topUps.credit(row, `pi_${s.id}`)).toBeNull();
      expect(await topUps.credit(row, `pi_${s.id}`)).toBe("credited already");
      expect((await o.ledger.balance(s.accountId)).balanceNano).toBe(5 * USD);
    });

    it("credits a session once when eight deliveries credit it at the same time", async () => {
      const s = await pending(5);
      const row = (await checkouts.find(s.id))!;
      const answers = await Promise.all(Array.from({ length: 8 }, () => topUps.credit(row, `pi_${s.id}`)));
      expect(answers.filter((a) => a === null)).toHaveLength(1);
      expect(await topUpEntries(s.accountId)).toHaveLength(1);
      expect((await o.ledger.balance(s.accountId)).balanceNano).toBe(5 * USD);
    });

    it("credits nothing for a payment credited already under another session, which stays pending", async () => {
      const first = await pending(5);
      const second = await pending(5);
      const payment = `pi_shared_${seq}`;
      expect(await topUps.credit((await checkouts.find(first.id))!, payment)).toBeNull();
      expect(await topUps.credit((await checkouts.find(second.id))!, payment)).toBe(`payment ${payment} is credited already`);
      expect(await topUpEntries(second.accountId)).toEqual([]);
      expect((await checkouts.find(second.id))!.status).toBe("pending");
    });
  });
}
