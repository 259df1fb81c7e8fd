import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import type { AccountStore } from "../../src/store/accounts/contract.ts";
import type { CodeStore } from "../../src/store/codes/contract.ts";
import { Codes } from "../../src/store/codes/sqlite.ts";
import { PgCodes } from "../../src/store/codes/postgres.ts";
import { codeHash, newCode } from "../../src/payments/codes.ts";
import { GatewayError } from "../../src/core/errors.ts";
import { accountStore, ENGINES, stopEngines, type Opened } from "../support/ledger-engines.ts";

// The redemption codes (store/codes/), one suite on both engines: a batch kept as hashes, a code
// redeemed once however many ask at the same moment, its value one redemption ledger entry.

setDefaultTimeout(30_000);
const USD = 1_000_000_000;
let seq = 0;
afterAll(() => stopEngines());

const refusal = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (e) {
    return e instanceof GatewayError ? [e.code, e.message] : String(e);
  }
  return "redeemed";
};

for (const engine of ENGINES) {
  describe(`redemption codes on ${engine.name}`, () => {
    let o: Opened;
    let codes: CodeStore;
    let accounts: AccountStore;
    beforeAll(async () => {
      o = await engine.open();
      accounts = accountStore(o);
      codes = o.engine === "sqlite" ? new Codes(o.db, o.ledger, o.commits) : new PgCodes(o.db, o.ledger);
    });
    afterAll(() => o.close());

    const account = async () => (await accounts.create(`c${++seq}@codes.test`, { balanceNano: 0 })).id;
    const balance = async (id: number) => (await accounts.findById(id))!.balanceNano;
    /** A batch of `n` codes of `usd` each; the codes' text. */
    async function batch(usd: number, n = 1, expiresAt: number | null = null): Promise<string[]> {
      const texts = Array.from({ length: n }, newCode);
      await codes.createBatch({ amountNano: usd * USD, expiresAt, note: "t", createdByAccountId: null }, texts.map((t) => codeHash(t)!));
      return texts;
    }

    it("lists batches newest first with their used count", async () => {
      const [a] = await batch(2, 3);
      await codes.redeem(codeHash(a!)!, await account());
      const [newest] = await codes.batches();
      expect(newest).toMatchObject({ amountNano: 2 * USD, count: 3, used: 1, note: "t", expiresAt: null, createdByAccountId: null });
    });

    it("credits a code's value once as one redemption entry", async () => {
      const [code] = await batch(3);
      const id = await account();
      expect(await codes.redeem(codeHash(code!)!, id)).toMatchObject({ amountNano: 3 * USD });
      expect(await balance(id)).toBe(3 * USD);
      const entries = (await accounts.recentEntries(id, 10)).map((e) => [e.kind, e.amountNano, e.externalRef]);
      expect(entries).toEqual([["redemption", 3 * USD, `code:${codeHash(code!)}`]]);
    });

    it("credits one of 20 redemptions of one code at the same moment", async () => {
      const [code] = await batch(4);
      const ids = await Promise.all(Array.from({ length: 20 }, account));
      const outcomes = await Promise.all(ids.map((id) => refusal(codes.redeem(codeHash(code!)!, id))));
      expect(outcomes.filter((x) => x === "redeemed")).toHaveLength(1);
      expect(outcomes.filter((x) => x !== "redeemed").every((x) => Array.isArray(x) && x[0] === "code_invalid")).toBe(true);
      const balances = await Promise.all(ids.map(balance));
      expect(balances.reduce((a, b) => a + b, 0)).toBe(4 * USD);
    });

    it("answers a used code and an unknown one alike", async () => {
      const [code] = await batch(1);
      await codes.redeem(codeHash(code!)!, await account());
      const id = await account();
      const used = await refusal(codes.redeem(codeHash(code!)!, id));
      const unknown = await refusal(codes.redeem(codeHash(newCode())!, id));
      expect(used).toEqual(unknown);
      expect(used).toEqual(["code_invalid", expect.any(String)]);
      expect(await balance(id)).toBe(0);
    });

    it("refuses an expired code and credits nothing", async () => {
      const [code] = await batch(1, 1, Date.now() + 50);
      await Bun.sleep(80);
      const id = await account();
      expect((await refusal(codes.redeem(codeHash(code!)!, id)))[0]).toBe("code_expired");
      expect(await balance(id)).toBe(0);
    });

    it("opens an invited account with the code's value as its one redemption entry, outside the day's ceiling", async () => {
      const [code] = await batch(7);
      const acc = await accounts.create(`i${++seq}@codes.test`, { invite: codes.inviteClaim(codeHash(code!)!), dailyLimitNano: 0 });
      expect(acc.balanceNano).toBe(7 * USD);
      expect((await accounts.recentEntries(acc.id, 10)).map((e) => e.kind)).toEqual(["redemption"]);
    });

    it("creates no account when the invite's code is used", async () => {
      const [code] = await batch(1);
      await codes.redeem(codeHash(code!)!, await account());
      const email = `u${++seq}@codes.test`;
      expect((await refusal(Promise.resolve().then(() => accounts.create(email, { invite: codes.inviteClaim(codeHash(code!)!) }))))[0]).toBe("code_invalid");
      expect(await accounts.find(email)).toBeNull();
    });
  });
}
