import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { FIXED_MODEL, GATEWAY_ENGINES, type EngineGateway } from "../support/engine-gateway.ts";
import { stopEngines } from "../support/engines.ts";
import { expectError } from "../support/errors.ts";
import { startStripeMock, type StripeMock } from "../support/stripe-mock.ts";
import { Browser } from "../api/support.ts";

// This file's PostgreSQL server (support/engines.ts), after the gateways' own afterAll.
afterAll(stopEngines);
setDefaultTimeout(60_000);

// docs/dashboard.md#receipts on both engines: the receipt's one read joins the session, its top_up
// entry and the account (bigint columns come back as text on PostgreSQL).

for (const engine of GATEWAY_ENGINES) {
  describe(`a top-up's receipt on ${engine.name}`, () => {
    let stripe: StripeMock;
    let gw: EngineGateway;
    let stop: () => Promise<void>;
    beforeAll(async () => {
      stripe = startStripeMock();
      ({ gw, stop } = await engine.start({ models: [FIXED_MODEL], config: stripe.config() }));
    });
    afterAll(async () => {
      await stop?.();
      stripe?.stop();
    });

    it("names the top_up entry's number and payment id, to the owner only", async () => {
      const { accountId } = await gw.account(0);
      const email = (await gw.services.accounts.findById(accountId))!.email;
      const { id } = await gw.services.payments.start({ accountId, email, amountUsd: 7, returnTo: "http://127.0.0.1", requestId: `req_r${accountId}` });
      expect((await stripe.deliver(gw.url, stripe.event(id).payload)).status).toBe(200);
      const entry = await gw.numbers("SELECT id FROM ledger_entries WHERE account_id = $1 AND kind = 'top_up'", accountId);
      const owner = new Browser(gw.url);
      owner.cookie = (await gw.services.sessions.open(accountId)).token;
      const res = await owner.call("GET", `/api/topups/${id}/receipt`);
      expect(res.status).toBe(200);
      const html = await res.text();
      for (const part of [`R-${String(entry.id).padStart(6, "0")}`, "7.00 USD", stripe.sessions.get(id)!.payment_intent!, email]) expect(html).toContain(part);
      const other = new Browser(gw.url);
      other.cookie = (await gw.services.sessions.open((await gw.account(0)).accountId)).token;
      await expectError(await other.call("GET", `/api/topups/${id}/receipt`), 404, "topup_not_found");
    });
  });
}
