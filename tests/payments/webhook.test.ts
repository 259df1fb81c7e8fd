import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { body, dashboardGateway, registeredBrowser, type Browser } from "../api/support.ts";
import type { TestGateway } from "../support/gateway.ts";
import { expectError } from "../support/errors.ts";
import { startStripeMock, type StripeMock } from "../support/stripe-mock.ts";
import { events } from "../../src/core/events.ts";

// docs/dashboard.md, Top-ups: the balance is credited only by a `checkout.session.completed` (or
// `async_payment_succeeded`) webhook that Stripe signed, for the amount the gateway stored when it
// opened the session, exactly once per session however the deliveries come.

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

const STARTING = 1e9;

/** A registered holder with a Checkout Session of `usd` opened, and its account id. */
async function opened(usd = 5): Promise<{ b: Browser; accountId: number; session: string }> {
  const b = await registeredBrowser(gw);
  const accountId = (await body(await b.call("GET", "/api/me"))).id as number;
  const res = await b.call("POST", "/api/topups", { amount_usd: usd });
  expect(res.status).toBe(201);
  return { b, accountId, session: (await body(res)).id };
}

const topUps = (accountId: number) =>
  gw.services.db.$client.query("SELECT amount_nano, external_ref, note FROM ledger_entries WHERE account_id = ? AND kind = 'top_up'").all(accountId) as {
    amount_nano: number;
    external_ref: string;
    note: string;
  }[];

const balance = (accountId: number) => gw.money(accountId).balance;

describe("a signed checkout.session.completed", () => {
  it("credits the session's amount once, as a top_up whose external_ref is the payment's id", async () => {
    const { accountId, session } = await opened(5);
    const ev = stripe.event(session);
    const res = await stripe.deliver(gw.url, ev.payload);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ received: true, credited: true, session });
    const intent = stripe.sessions.get(session)!.payment_intent!;
    expect(intent).toStartWith("pi_");
    expect(topUps(accountId)).toEqual([{ amount_nano: 5e9, external_ref: intent, note: `Stripe Checkout ${session}` }]);
    const m = gw.money(accountId);
    expect(m.balance).toBe(STARTING + 5e9);
    expect(m.ledgerSum).toBe(m.balance);
  });

  it("shows the session credited in GET /api/topups and the balance in GET /api/me", async () => {
    const { b, session } = await opened(3);
    await stripe.deliver(gw.url, stripe.event(session).payload);
    const [t] = (await body(await b.call("GET", "/api/topups"))).data;
    expect(t).toMatchObject({ id: session, amount_usd: 3, status: "credited", credited_at: expect.any(String) });
    expect((await body(await b.call("GET", "/api/me"))).balance_usd).toBe(4);
  });

  it("credits the session's id as the external_ref when the session has no PaymentIntent", async () => {
    const { accountId, session } = await opened(2);
    await stripe.deliver(gw.url, stripe.event(session, { session: { payment_intent: null } }).payload);
    expect(topUps(accountId)).toEqual([{ amount_nano: 2e9, external_ref: session, note: `Stripe Checkout ${session}` }]);
  });

  it("credits before the browser ever returns from Checkout: the webhook alone credits", async () => {
    // No GET of the success page, no session_id read back: only Stripe's word.
    const { accountId, session } = await opened(8);
    await stripe.deliver(gw.url, stripe.event(session).payload);
    expect(balance(accountId)).toBe(STARTING + 8e9);
  });

  it("lets the new balance be spent at once on /v1", async () => {
    const { b, accountId, session } = await opened(1);
    const key = (await body(await b.call("POST", "/api/keys", {}))).key as string;
    await stripe.deliver(gw.url, stripe.event(session).payload);
    const me = await (await fetch(`${gw.url}/v1/me`, { headers: { authorization: `Bearer ${key}` } })).text();
    expect(me).toContain('"balance_usd":2');
    expect(balance(accountId)).toBe(2e9);
  });
});

describe("duplicate deliveries", () => {
  it("credits once when the same event is delivered twice", async () => {
    const { accountId, session } = await opened(5);
    const ev = stripe.event(session);
    expect((await stripe.deliver(gw.url, ev.payload)).status).toBe(200);
    const again = await stripe.deliver(gw.url, ev.payload);
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ received: true, credited: false, session, ignored: "credited already" });
    expect(topUps(accountId).length).toBe(1);
    expect(balance(accountId)).toBe(STARTING + 5e9);
  });

  it("credits once when two deliveries of the event arrive at the same time", async () => {
    const { accountId, session } = await opened(5);
    const ev = stripe.event(session);
    const answers = await Promise.all(Array.from({ length: 8 }, () => stripe.deliver(gw.url, ev.payload)));
    expect(answers.map((r) => r.status)).toEqual(Array(8).fill(200));
    const credited = (await Promise.all(answers.map((r) => body(r)))).filter((o) => o.credited);
    expect(credited.length).toBe(1);
    expect(topUps(accountId).length).toBe(1);
    expect(balance(accountId)).toBe(STARTING + 5e9);
  });

  it("credits once when completed and async_payment_succeeded both arrive for one session", async () => {
    const { accountId, session } = await opened(5);
    const completed = stripe.event(session);
    const succeeded = stripe.event(session, { type: "checkout.session.async_payment_succeeded" });
    const answers = await Promise.all([stripe.deliver(gw.url, completed.payload), stripe.deliver(gw.url, succeeded.payload)]);
    expect(answers.map((r) => r.status)).toEqual([200, 200]);
    expect(topUps(accountId).length).toBe(1);
    expect(balance(accountId)).toBe(STARTING + 5e9);
  });

  it("credits once when an event for another session names a payment already credited", async () => {
    const first = await opened(5);
    const second = await opened(5);
    const ev = stripe.event(first.session);
    await stripe.deliver(gw.url, ev.payload);
    const intent = stripe.sessions.get(first.session)!.payment_intent!;
    const res = await stripe.deliver(gw.url, stripe.event(second.session, { session: { payment_intent: intent } }).payload);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ received: true, credited: false, session: second.session, ignored: `payment ${intent} is credited already` });
    expect(balance(second.accountId)).toBe(STARTING);
    expect((await body(await second.b.call("GET", "/api/topups"))).data[0].status).toBe("pending");
  });
});

describe("events that credit nothing", () => {
  it("acknowledges a session this gateway did not open, with 200", async () => {
    const { session } = await opened(5);
    const ev = stripe.event(session, { session: { id: "cs_test_someoneelse" } });
    const res = await stripe.deliver(gw.url, ev.payload);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ received: true, credited: false, session: "cs_test_someoneelse", ignored: "not a Checkout Session of this gateway" });
  });

  it("acknowledges an event of another type", async () => {
    const { accountId, session } = await opened(5);
    const res = await stripe.deliver(gw.url, stripe.event(session, { type: "checkout.session.expired" }).payload);
    expect(res.status).toBe(200);
    expect((await body(res)).ignored).toBe("checkout.session.expired credits nothing");
    expect(balance(accountId)).toBe(STARTING);
  });

  it("acknowledges a refund and a dispute of a credited top-up and takes nothing back: the operator debits it", async () => {
    const { accountId, session } = await opened(5);
    await stripe.deliver(gw.url, stripe.event(session).payload);
    const intent = stripe.sessions.get(session)!.payment_intent!;
    const charge = { id: `ch_${session}`, object: "charge", payment_intent: intent, amount: 500, amount_refunded: 500, currency: "usd", refunded: true };
    const events = [
      { id: `evt_refund_${session}`, object: "event", type: "charge.refunded", data: { object: charge } },
      { id: `evt_dispute_${session}`, object: "event", type: "charge.dispute.created", data: { object: { id: `dp_${session}`, object: "dispute", charge: charge.id, payment_intent: intent, amount: 500, currency: "usd" } } },
    ];
    for (const ev of events) {
      const res = await stripe.deliver(gw.url, JSON.stringify(ev));
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ received: true, credited: false, session: null, ignored: `${ev.type} credits nothing` });
    }
    const m = gw.money(accountId);
    expect(m.balance).toBe(STARTING + 5e9);
    expect(m.ledgerSum).toBe(m.balance);
  });

  it("waits for async_payment_succeeded when the completed session is not paid yet", async () => {
    const { accountId, session } = await opened(5);
    const unpaid = await stripe.deliver(gw.url, stripe.event(session, { session: { payment_status: "unpaid" } }).payload);
    expect(unpaid.status).toBe(200);
    expect((await body(unpaid)).ignored).toBe("payment_status is unpaid; credited once Stripe reports it paid");
    expect(balance(accountId)).toBe(STARTING);
    await stripe.deliver(gw.url, stripe.event(session, { type: "checkout.session.async_payment_succeeded" }).payload);
    expect(balance(accountId)).toBe(STARTING + 5e9);
  });
});

describe("a paid session that is not the one opened", () => {
  it("refuses an amount other than the stored one, credits nothing, and tells the operator", async () => {
    const { accountId, session } = await opened(5);
    const lines: string[] = [];
    const restore = events.redirect((l) => lines.push(l));
    try {
      const err = await expectError(await stripe.deliver(gw.url, stripe.event(session, { session: { amount_total: 50000 } }).payload), 400, "payment_mismatch");
      expect(err.message).toBe(`Checkout Session ${session} was not credited: paid 50000 cents where 500 cents (5 USD) were asked.`);
    } finally {
      restore();
    }
    expect(balance(accountId)).toBe(STARTING);
    const line = JSON.parse(lines.find((l) => l.includes("payment_not_credited"))!);
    expect(line).toMatchObject({ level: "error", event: "payment_not_credited", session, account_id: accountId });
  });

  it("refuses a top-up that would take the balance past its ceiling, tells the operator, and credits it once Stripe retries after room is made", async () => {
    const { accountId, session } = await opened(5);
    await gw.services.ledger.credit(accountId, Number.MAX_SAFE_INTEGER - STARTING - 1e9, "operator_credit");
    const full = balance(accountId);
    const payload = stripe.event(session).payload;
    const lines: string[] = [];
    const restore = events.redirect((l) => lines.push(l));
    try {
      const err = await expectError(await stripe.deliver(gw.url, payload), 400, "invalid_request");
      expect(err.message).toContain("past 9007199.254740991 USD");
    } finally {
      restore();
    }
    expect(balance(accountId)).toBe(full);
    const line = JSON.parse(lines.find((l) => l.includes("payment_not_credited"))!);
    expect(line).toMatchObject({ level: "error", event: "payment_not_credited", session, account_id: accountId });
    expect(line.reason).toContain("past 9007199.254740991 USD");
    await gw.services.accounts.debit(accountId, 10e9, "room for the top-up");
    const retried = await stripe.deliver(gw.url, payload);
    expect(await retried.json()).toEqual({ received: true, credited: true, session });
    const m = gw.money(accountId);
    expect(m.balance).toBe(full - 10e9 + 5e9);
    expect(m.ledgerSum).toBe(m.balance);
  });

  it("refuses another currency", async () => {
    const { b, accountId, session } = await opened(5);
    const restore = events.redirect(() => {});
    try {
      const err = await expectError(await stripe.deliver(gw.url, stripe.event(session, { session: { currency: "eur" } }).payload), 400, "payment_mismatch");
      expect(err.message).toContain("paid in eur, not usd");
    } finally {
      restore();
    }
    expect(topUps(accountId)).toEqual([]);
    expect((await body(await b.call("GET", "/api/topups"))).data[0].status).toBe("pending");
  });
});

describe("the signature", () => {
  it("refuses a payload signed with another secret, crediting nothing", async () => {
    const { accountId, session } = await opened(5);
    const ev = stripe.event(session);
    const err = await expectError(await stripe.deliver(gw.url, ev.payload, stripe.sign(ev.payload, { secret: "whsec_notthegatewaysone" })), 400, "invalid_signature");
    expect(err.message).toStartWith("The Stripe-Signature of this webhook does not check out: No signatures found matching the expected signature");
    expect(balance(accountId)).toBe(STARTING);
  });

  it("refuses a payload changed after signing", async () => {
    const { accountId, session } = await opened(5);
    const ev = stripe.event(session);
    const signature = stripe.sign(ev.payload);
    await expectError(await stripe.deliver(gw.url, ev.payload.replace('"amount_total":500', '"amount_total":500 '), signature), 400, "invalid_signature");
    expect(balance(accountId)).toBe(STARTING);
  });

  it("refuses a signature older than five minutes (a replay), crediting nothing", async () => {
    const { accountId, session } = await opened(5);
    const ev = stripe.event(session);
    const stale = stripe.sign(ev.payload, { timestamp: Math.floor(Date.now() / 1000) - 301 });
    const err = await expectError(await stripe.deliver(gw.url, ev.payload, stale), 400, "invalid_signature");
    expect(err.message).toContain("Timestamp outside the tolerance zone");
    expect(balance(accountId)).toBe(STARTING);
    // The same event, freshly signed as Stripe's retry would be, still credits.
    expect((await stripe.deliver(gw.url, ev.payload)).status).toBe(200);
    expect(balance(accountId)).toBe(STARTING + 5e9);
  });

  it("refuses a signature dated more than five minutes ahead, crediting nothing", async () => {
    // A signature made ahead of time would otherwise stay valid until its date plus five minutes.
    const { accountId, session } = await opened(5);
    const ev = stripe.event(session);
    const ahead = stripe.sign(ev.payload, { timestamp: Math.floor(Date.now() / 1000) + 3600 });
    const err = await expectError(await stripe.deliver(gw.url, ev.payload, ahead), 400, "invalid_signature");
    expect(err.message).toContain("dated in the future");
    expect(balance(accountId)).toBe(STARTING);
    // A clock a little ahead of the gateway's (within five minutes) is still Stripe's delivery.
    const slightly = stripe.sign(ev.payload, { timestamp: Math.floor(Date.now() / 1000) + 240 });
    expect((await stripe.deliver(gw.url, ev.payload, slightly)).status).toBe(200);
    expect(balance(accountId)).toBe(STARTING + 5e9);
  });

  it("refuses a delivery without a Stripe-Signature header", async () => {
    const { session } = await opened(5);
    const res = await fetch(`${gw.url}/api/stripe/webhook`, { method: "POST", headers: { "content-type": "application/json" }, body: stripe.event(session).payload });
    const err = await expectError(res, 400, "invalid_signature");
    expect(err.message).toBe("This webhook carries no Stripe-Signature header.");
  });

  it("never names the webhook secret in a refusal", async () => {
    const { session } = await opened(5);
    const ev = stripe.event(session);
    const res = await stripe.deliver(gw.url, ev.payload, `t=${Math.floor(Date.now() / 1000)},v1=${stripe.webhookSecret}`);
    const text = await res.text();
    expect(res.status).toBe(400);
    expect(text).not.toContain(stripe.webhookSecret);
  });
});

describe("the webhook's route", () => {
  it("takes no Origin and no session: Stripe's servers call it", async () => {
    const { accountId, session } = await opened(5);
    const ev = stripe.event(session);
    const res = await fetch(`${gw.url}/api/stripe/webhook`, { method: "POST", headers: { "stripe-signature": stripe.sign(ev.payload) }, body: ev.payload });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(balance(accountId)).toBe(STARTING + 5e9);
  });

  it("refuses a body over 1 MiB with 413 naming its 1 MiB limit", async () => {
    const big = JSON.stringify({ pad: "x".repeat(1024 * 1024) });
    const err = await expectError(await stripe.deliver(gw.url, big), 413, "request_too_large");
    expect(err.message).toBe("Request body is larger than this route's 1 MiB limit.");
  });
});
