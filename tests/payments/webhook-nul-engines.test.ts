import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { FIXED_MODEL, GATEWAY_ENGINES, type EngineGateway } from "../support/engine-gateway.ts";
import { stopEngines } from "../support/engines.ts";
import { expectError } from "../support/errors.ts";
import { startStripeMock, type MockSession, type StripeMock } from "../support/stripe-mock.ts";

// This file's PostgreSQL server (support/engines.ts), after the gateways' own afterAll.
afterAll(stopEngines);
setDefaultTimeout(60_000);

// U+0000 in a signed Stripe event, on both engines (docs/dashboard.md#top-ups). The webhook's body is
// Stripe's, not a browser's, so the /api/ bodies' refusal of the character does not cover it. A text
// the gateway never reads (metadata, the customer's email) must not stop the credit; an id it looks
// up or stores (the session's, the PaymentIntent's) holding it is no id Stripe makes: before, the
// session's was looked up and answered 500 on PostgreSQL (and "not ours" on SQLite), and the
// PaymentIntent's was written as the top-up's external_ref, 500 on PostgreSQL for every retry.

const NUL = "a\u0000b";
const STARTING = 10e9;

for (const engine of GATEWAY_ENGINES) {
  describe(`a signed Stripe event holding U+0000 on ${engine.name}`, () => {
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

    /** An account with a 5 USD Checkout Session opened for it: its id and the session's. */
    async function opened(): Promise<{ accountId: number; session: string }> {
      const { accountId } = await gw.account(STARTING / 1e9);
      const email = (await gw.services.accounts.findById(accountId))!.email;
      const { id } = await gw.services.payments.start({ accountId, email, amountUsd: 5, returnTo: "http://127.0.0.1", requestId: `req_${accountId}` });
      return { accountId, session: id };
    }

    const expectBooks = async (accountId: number, balance: number) => {
      const m = await gw.money(accountId);
      expect(m.balance).toBe(balance);
      expect(m.ledgerSum).toBe(balance);
    };

    const unread: [string, Record<string, unknown>][] = [
      ["the metadata", { metadata: { gateway_account_id: NUL, note: NUL } }],
      ["the customer's email", { customer_email: `x${NUL}@example.com`, customer_details: { email: `x${NUL}@example.com`, name: NUL } }],
      ["the client reference", { client_reference_id: NUL }],
    ];
    for (const [where, session] of unread) {
      it(`credits the top-up once when ${where} holds it, which the gateway never reads`, async () => {
        const { accountId, session: id } = await opened();
        const { payload } = stripe.event(id, { session: session as Partial<MockSession> });
        const res = await stripe.deliver(gw.url, payload);
        expect(res.status).toBe(200);
        expect(await res.json()).toEqual({ received: true, credited: true, session: id });
        await expectBooks(accountId, STARTING + 5e9);
        // Stripe's retry of the same event credits nothing more.
        expect((await stripe.deliver(gw.url, payload)).status).toBe(200);
        await expectBooks(accountId, STARTING + 5e9);
      });
    }

    const read: [string, (id: string) => Record<string, unknown>, string][] = [
      ["the session's id", (id) => ({ id: `${id}\u0000` }), "data.object.id"],
      ["the PaymentIntent's id", () => ({ payment_intent: `pi_${NUL}` }), "data.object.payment_intent"],
      ["the PaymentIntent object's id", () => ({ payment_intent: { id: `pi_${NUL}`, object: "payment_intent" } }), "data.object.payment_intent"],
      ["the payment status", () => ({ payment_status: `paid${NUL}` }), "data.object.payment_status"],
      ["the currency", () => ({ currency: `usd${NUL}` }), "data.object.currency"],
    ];
    for (const [where, session, field] of read) {
      it(`refuses it in ${where} with 400 invalid_request naming ${field}, crediting nothing, and credits the genuine event after`, async () => {
        const { accountId, session: id } = await opened();
        const res = await stripe.deliver(gw.url, stripe.event(id, { session: session(id) as Partial<MockSession> }).payload);
        const err = await expectError(res, 400, "invalid_request");
        expect(err.message).toContain(field);
        expect(err.message).toContain("U+0000");
        await expectBooks(accountId, STARTING);
        const good = await stripe.deliver(gw.url, stripe.event(id).payload);
        expect(await good.json()).toEqual({ received: true, credited: true, session: id });
        await expectBooks(accountId, STARTING + 5e9);
      });
    }

    it("refuses it in the event's id and type, crediting nothing", async () => {
      const { accountId, session: id } = await opened();
      for (const change of [{ id: `evt_${NUL}` }, { type: `checkout.session.completed${NUL}` }]) {
        const payload = JSON.stringify({ ...JSON.parse(stripe.event(id).payload), ...change });
        await expectError(await stripe.deliver(gw.url, payload), 400, "invalid_request");
      }
      await expectBooks(accountId, STARTING);
    });
  });
}
