import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { mintBatch } from "../../src/payments/codes.ts";
import { FIXED_MODEL, GATEWAY_ENGINES, type EngineGateway } from "../support/engine-gateway.ts";
import { stopEngines } from "../support/engines.ts";
import { Browser } from "./support.ts";

// This file's PostgreSQL server (support/engines.ts), after the gateways' own afterAll.
afterAll(stopEngines);
setDefaultTimeout(60_000);

// docs/dashboard.md#redemption-codes, over HTTP on both engines: one code redeemed by 20 sessions at
// the same moment credits once. The sessions are opened through the gateway's own store (20
// registrations from loopback would meet the registration throttle, which is not what is tested).

const USD = 1_000_000_000;

for (const engine of GATEWAY_ENGINES) {
  describe(`POST /api/redeem on ${engine.name}`, () => {
    let gw: EngineGateway;
    let stop: () => Promise<void>;
    beforeAll(async () => {
      ({ gw, stop } = await engine.start({
        models: [FIXED_MODEL],
      }));
    });
    afterAll(() => stop());

    it("credits once when 20 sessions of 20 accounts redeem one code at the same moment", async () => {
      const [code] = (await mintBatch(gw.services.codes, { amountNano: 5 * USD, count: 1, expiresAt: null, note: null, createdByAccountId: null })).codes;
      const holders = await Promise.all(
        Array.from({ length: 20 }, async () => {
          const { accountId } = await gw.account(1);
          const b = new Browser(gw.url);
          b.cookie = (await gw.services.sessions.open(accountId)).token;
          return { b, accountId };
        }),
      );
      const answers = await Promise.all(holders.map((h) => h.b.call("POST", "/api/redeem", { code })));
      expect(answers.map((r) => r.status).sort()).toEqual([200, ...Array(19).fill(400)]);
      const balances = await Promise.all(holders.map(async (h) => (await gw.money(h.accountId)).balance));
      expect(balances.reduce((a, b) => a + b, 0)).toBe(25 * USD);
      const redemptions = (await Promise.all(holders.map((h) => gw.ledgerRows(h.accountId)))).flat().filter((r) => r.kind === "redemption");
      expect(redemptions.map((r) => r.amount_nano)).toEqual([5 * USD]);
    });
  });
}
