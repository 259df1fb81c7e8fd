import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { FIXED_MODEL, GATEWAY_ENGINES, type EngineGateway } from "../support/engine-gateway.ts";
import { stopEngines } from "../support/engines.ts";
import { expectError } from "../support/errors.ts";
import { Browser } from "./support.ts";

// This file's PostgreSQL server (support/engines.ts), after the gateways' own afterAll.
afterAll(stopEngines);
// Registering the admin hashes a password with Argon2id: seconds on a loaded machine.
setDefaultTimeout(60_000);

// docs/dashboard.md#idempotent-credits-and-debits: an admin's credit or debit sent twice with one
// Idempotency-Key moves the money once, and the second answer is the first replayed; the same key
// with another body is 409 idempotency_conflict and moves nothing. Before, a script that retried a
// credit of 5 USD (a timeout, a double click) credited 10 USD and wrote two ledger entries.

const USD = 1_000_000_000;

for (const engine of GATEWAY_ENGINES) {
  describe(`an admin's credit and debit with an Idempotency-Key on ${engine.name}`, () => {
    let gw: EngineGateway;
    let stop: () => Promise<void>;
    let admin: Browser;
    beforeAll(async () => {
      ({ gw, stop } = await engine.start({ models: [FIXED_MODEL] }));
      admin = new Browser(gw.url);
      expect((await admin.register()).res.status).toBe(201);
      const me = (await (await admin.call("GET", "/api/me")).json()) as { id: number };
      await gw.services.accounts.setAdmin(me.id, true);
    });
    afterAll(() => stop());

    const move = (op: "credit" | "debit", accountId: number, usd: number, key?: string, note = "retried by a script") =>
      admin.call("POST", `/api/admin/accounts/${accountId}/${op}`, { usd, note }, key ? { "idempotency-key": key } : {});

    /** The balance, and the account's operator entries (kind, nano) oldest first; the balance is the ledger's sum. */
    async function books(accountId: number) {
      const money = await gw.money(accountId);
      expect(money.balance).toBe(money.ledgerSum);
      const entries = (await gw.ledgerRows(accountId)).filter((r) => r.kind.startsWith("operator_")).map((r) => [r.kind, r.amount_nano]);
      return { balance: money.balance, entries };
    }

    for (const [op, kind, sign] of [["credit", "operator_credit", 1], ["debit", "operator_debit", -1]] as const) {
      it(`moves a ${op} sent twice with one key once, and replays the first answer`, async () => {
        const { accountId } = await gw.account(10);
        const key = crypto.randomUUID();
        const first = await move(op, accountId, 2, key);
        expect(first.status).toBe(200);
        const firstBody = await first.text();
        const second = await move(op, accountId, 2, key);
        expect(second.status).toBe(200);
        expect(second.headers.get("idempotent-replayed")).toBe("true");
        expect(await second.text()).toBe(firstBody);
        expect(await books(accountId)).toEqual({ balance: 10 * USD + sign * 2 * USD, entries: [[kind, sign * 2 * USD]] });
      });

      it(`refuses a ${op} that reuses a key with another amount: 409 idempotency_conflict, nothing moved`, async () => {
        const { accountId } = await gw.account(10);
        const key = crypto.randomUUID();
        expect((await move(op, accountId, 2, key)).status).toBe(200);
        await expectError(await move(op, accountId, 3, key), 409, "idempotency_conflict");
        expect(await books(accountId)).toEqual({ balance: 10 * USD + sign * 2 * USD, entries: [[kind, sign * 2 * USD]] });
      });

      it(`moves two ${op}s sent at once with one key once`, async () => {
        const { accountId } = await gw.account(10);
        const key = crypto.randomUUID();
        const answers = await Promise.all([move(op, accountId, 1, key), move(op, accountId, 1, key)]);
        expect(answers.map((r) => r.status)).toEqual([200, 200]);
        expect(answers.filter((r) => r.headers.get("idempotent-replayed") === "true")).toHaveLength(1);
        expect(await books(accountId)).toEqual({ balance: 10 * USD + sign * USD, entries: [[kind, sign * USD]] });
      });
    }

    it("moves a credit sent twice without a key twice, as before", async () => {
      const { accountId } = await gw.account(10);
      for (let i = 0; i < 2; i++) expect((await move("credit", accountId, 1)).status).toBe(200);
      expect((await books(accountId)).balance).toBe(12 * USD);
    });

    it("frees the key of a refused debit, so the corrected retry runs", async () => {
      const { accountId } = await gw.account(10);
      const key = crypto.randomUUID();
      await expectError(await move("debit", accountId, 50, key), 400, "invalid_request");
      // Another body under the same key: not a conflict, since the refusal kept nothing.
      expect((await move("debit", accountId, 4, key)).status).toBe(200);
      expect(await books(accountId)).toEqual({ balance: 6 * USD, entries: [["operator_debit", -4 * USD]] });
    });

    it("keeps each account's path apart: one key credits two accounts once each", async () => {
      const [a, b] = [await gw.account(10), await gw.account(10)];
      const key = crypto.randomUUID();
      expect((await move("credit", a.accountId, 1, key)).status).toBe(200);
      expect((await move("credit", b.accountId, 1, key)).status).toBe(200);
      expect((await books(a.accountId)).balance).toBe(11 * USD);
      expect((await books(b.accountId)).balance).toBe(11 * USD);
    });
  });
}
