import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { body, dashboardGateway, registeredBrowser } from "../api/support.ts";
import type { TestGateway } from "../support/gateway.ts";
import { expectError } from "../support/errors.ts";
import { startStripeMock, type StripeMock } from "../support/stripe-mock.ts";
import { events } from "../../src/core/events.ts";

// docs/dashboard.md, Top-ups (The webhook): an event that is correctly signed but whose body is not
// the shape Stripe sends (no `data`, `data.object` not an object, a field the gateway reads of the
// wrong type) is 400 invalid_request, logged for the operator, and credits nothing. It was a 500.

let stripe: StripeMock;
let gw: TestGateway;
beforeAll(async () => {
  stripe = startStripeMock();
  gw = await dashboardGateway(stripe.config());
});
afterAll(async () => {
  await gw.stop();
  stripe.stop();
});

/** A holder with a 5 USD Checkout Session opened, and its paid event as an object to spoil. */
async function paidEvent(): Promise<{ accountId: number; session: string; event: Record<string, any> }> {
  const b = await registeredBrowser(gw);
  const accountId = (await body(await b.call("GET", "/api/me"))).id as number;
  const session = (await body(await b.call("POST", "/api/topups", { amount_usd: 5 }))).id as string;
  return { accountId, session, event: JSON.parse(stripe.event(session).payload) };
}

const spoilt: [string, (e: Record<string, any>) => unknown, string][] = [
  ["no data", (e) => delete e.data, "data"],
  ["data: null", (e) => (e.data = null), "data"],
  ["data.object missing", (e) => (e.data = {}), "data.object"],
  ["data.object null", (e) => (e.data.object = null), "data.object"],
  ["data.object a string", (e) => (e.data.object = "cs_test_x"), "data.object"],
  ["data.object an array", (e) => (e.data.object = []), "data.object"],
  ["data.object not a checkout.session on a checkout event", (e) => (e.data.object.object = "charge"), "data.object.object"],
  ["the session id a number", (e) => (e.data.object.id = 12), "data.object.id"],
  ["amount_total a string", (e) => (e.data.object.amount_total = "500"), "data.object.amount_total"],
  ["amount_total a fraction", (e) => (e.data.object.amount_total = 500.5), "data.object.amount_total"],
  ["currency a number", (e) => (e.data.object.currency = 840), "data.object.currency"],
  ["payment_status missing", (e) => delete e.data.object.payment_status, "data.object.payment_status"],
  ["payment_intent a number", (e) => (e.data.object.payment_intent = 7), "data.object.payment_intent"],
  ["payment_intent an object without id", (e) => (e.data.object.payment_intent = {}), "data.object.payment_intent"],
  ["the event's type missing", (e) => delete e.type, "type"],
  ["the event's id a number", (e) => (e.id = 1), "id"],
];

describe("a signed event of the wrong shape", () => {
  for (const [what, spoil, field] of spoilt) {
    it(`answers 400 invalid_request naming ${field}, and credits nothing: ${what}`, async () => {
      const { accountId, session, event } = await paidEvent();
      spoil(event);
      const err = await expectError(await stripe.deliver(gw.url, JSON.stringify(event)), 400, "invalid_request");
      expect(err.message).toContain(field);
      expect(gw.money(accountId).balance).toBe(1e9);
      expect(gw.services.db.$client.query("SELECT status FROM checkout_sessions WHERE id = ?").get(session)).toEqual({ status: "pending" });
    });
  }

  for (const payload of ["null", "[]", "5", '"event"', "{not json", '{"id":"evt_1","object":"v2.core.event","type":"v1.billing.meter.error_report_triggered"}']) {
    it(`answers 400 invalid_request to a signed body that is not an event object: ${payload}`, async () => {
      await expectError(await stripe.deliver(gw.url, payload), 400, "invalid_request");
    });
  }

  it("logs the refusal for the operator, with the event's id and what is wrong, without the secret or the body", async () => {
    const { event } = await paidEvent();
    event.data.object.amount_total = "500";
    const lines: string[] = [];
    const restore = events.redirect((l) => lines.push(l));
    try {
      await expectError(await stripe.deliver(gw.url, JSON.stringify(event)), 400, "invalid_request");
    } finally {
      restore();
    }
    const line = lines.find((l) => l.includes("stripe_event_malformed"));
    expect(line).toBeDefined();
    expect(JSON.parse(line!)).toMatchObject({ level: "error", event: "stripe_event_malformed", stripe_event: event.id, reason: expect.stringContaining("data.object.amount_total") });
    expect(line).not.toContain(stripe.webhookSecret);
    expect(line).not.toContain(event.data.object.customer_email);
  });

  it("still acknowledges a well-formed event of another type whose object is not a session", async () => {
    const { event } = await paidEvent();
    event.type = "charge.succeeded";
    event.data.object = { id: "ch_test_1", object: "charge", amount: 500 };
    const res = await stripe.deliver(gw.url, JSON.stringify(event));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ received: true, credited: false, session: null, ignored: "charge.succeeded credits nothing" });
  });
});
