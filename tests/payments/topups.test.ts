import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { body, Browser, dashboardGateway, freshEmail, registeredBrowser } from "../api/support.ts";
import type { TestGateway } from "../support/gateway.ts";
import { expectError } from "../support/errors.ts";
import { startStripeMock, type StripeMock } from "../support/stripe-mock.ts";
import { events } from "../../src/core/events.ts";

// docs/dashboard.md, Top-ups: POST /api/topups opens a Stripe Checkout Session for the amount (a
// loopback Stripe here); GET /api/topups lists the account's. Crediting is the webhook's
// (webhook.test.ts).

let stripe: StripeMock;
let gw: TestGateway;
// Stripe's refusals are 502s, each an operator's event line: kept off the test output.
let restoreEvents: () => void;
beforeAll(async () => {
  restoreEvents = events.redirect(() => {});
  stripe = startStripeMock();
  gw = await dashboardGateway({ ...stripe.config(), server: { public_url: "http://dash.test:8080" } });
});
afterAll(async () => {
  await gw.stop();
  stripe.stop();
  restoreEvents();
});

/** A registered holder whose requests carry the configured public_url's Origin. */
async function holder() {
  const b = new Browser(gw.url);
  const call = (method: string, path: string, json?: unknown) => b.call(method, path, json, { origin: "http://dash.test:8080" });
  expect((await call("POST", "/api/register", { email: freshEmail(), password: "correct horse" })).status).toBe(201);
  return { call };
}

describe("POST /api/topups", () => {
  it("opens a Checkout Session for the amount in cents and answers its id and payment page", async () => {
    const h = await holder();
    const res = await h.call("POST", "/api/topups", { amount_usd: 12.5 });
    expect(res.status).toBe(201);
    const t = await body(res);
    expect(t).toEqual({ object: "topup", id: expect.stringMatching(/^cs_test_/), url: expect.stringMatching(/^https:\/\/checkout\.stripe\.com\//), amount_usd: 12.5 });
    const s = stripe.sessions.get(t.id)!;
    expect(s).toMatchObject({ mode: "payment", amount_total: 1250, currency: "usd" });
    expect(s.line_items_sent).toEqual({ "0": { quantity: "1", price_data: { currency: "usd", unit_amount: "1250", product_data: { name: "Gateway balance top-up" } } } });
  });

  it("sends the browser back to the dashboard's top-up page at public_url, with the session id or cancelled", async () => {
    const h = await holder();
    const t = await body(await h.call("POST", "/api/topups", { amount_usd: 5 }));
    const s = stripe.sessions.get(t.id)!;
    expect(s.success_url).toBe("http://dash.test:8080/#/topup?session_id={CHECKOUT_SESSION_ID}");
    expect(s.cancel_url).toBe("http://dash.test:8080/#/topup?cancelled=1");
  });

  it("names the account to Stripe and sends the secret key as Bearer with an idempotency key", async () => {
    const h = await holder();
    const me = await body(await h.call("GET", "/api/me"));
    const res = await h.call("POST", "/api/topups", { amount_usd: 3 });
    const sent = stripe.requests.findLast((r) => r.path === "/v1/checkout/sessions")!;
    expect(sent.headers.authorization).toBe(`Bearer ${stripe.secretKey}`);
    expect(sent.headers["idempotency-key"]).toBe(res.headers.get("x-gateway-request-id")!);
    expect(sent.form).toMatchObject({ customer_email: me.email, client_reference_id: String(me.id), metadata: { gateway_account_id: String(me.id) } });
  });

  it.each([
    ["less than 1 USD, saying the minimum", 0.99, "amount_usd: the minimum top-up is 1 USD (got 0.99)."],
    ["an amount that is not a whole number of cents", 5.005, "amount_usd: must be a whole number of cents, such as 5 or 12.50 (got 5.005)."],
    ["more than Stripe takes in one charge", 1_000_000, "amount_usd: the largest top-up Stripe takes is 999999.99 USD (got 1000000)."],
  ])("refuses %s", async (_, amount_usd, message) => {
    const h = await holder();
    const err = await expectError(await h.call("POST", "/api/topups", { amount_usd }), 400, "invalid_request");
    expect(err.message).toBe(message);
  });

  it("refuses a body without amount_usd, naming the field", async () => {
    const h = await holder();
    const err = await expectError(await h.call("POST", "/api/topups", { usd: 5 }), 400, "invalid_request");
    expect(err.message).toContain("amount_usd");
  });

  it("opens no session when the amount is refused", async () => {
    const h = await holder();
    const before = stripe.requests.length;
    await h.call("POST", "/api/topups", { amount_usd: 0.5 });
    expect(stripe.requests.length).toBe(before);
  });

  it("needs a live session", async () => {
    const res = await fetch(`${gw.url}/api/topups`, { method: "POST", headers: { origin: "http://dash.test:8080", "content-type": "application/json" }, body: '{"amount_usd":5}' });
    await expectError(res, 401, "no-session", "authentication_error");
  });

  it("answers 502 when Stripe refuses, and records no session", async () => {
    const h = await holder();
    stripe.failNext = { status: 400, type: "invalid_request_error", message: "Your account cannot currently make live charges." };
    const err = await expectError(await h.call("POST", "/api/topups", { amount_usd: 5 }), 502, "upstream_unavailable");
    expect(err.message).toBe("Stripe did not open a Checkout Session: Your account cannot currently make live charges.");
    expect((await body(await h.call("GET", "/api/topups"))).data).toEqual([]);
  });

  it("retries a call Stripe failed with the same idempotency key, so one session is opened", async () => {
    const h = await holder();
    const before = stripe.requests.length;
    stripe.failNext = { status: 500, type: "api_error", message: "Something went wrong on Stripe's end." };
    expect((await h.call("POST", "/api/topups", { amount_usd: 4 })).status).toBe(201);
    const sent = stripe.requests.slice(before);
    expect(sent.length).toBe(2);
    expect(sent[1]!.headers["idempotency-key"]).toBe(sent[0]!.headers["idempotency-key"]!);
    expect((await body(await h.call("GET", "/api/topups"))).data.length).toBe(1);
  });
});

describe("GET /api/topups", () => {
  it("lists the account's own sessions, newest first, pending until paid", async () => {
    const h = await holder();
    const first = await body(await h.call("POST", "/api/topups", { amount_usd: 2 }));
    const second = await body(await h.call("POST", "/api/topups", { amount_usd: 7.25 }));
    await (await holder()).call("POST", "/api/topups", { amount_usd: 9 });
    const list = await body(await h.call("GET", "/api/topups"));
    expect(list).toMatchObject({ object: "topups", enabled: true, minimum_usd: 1 });
    expect(list.data).toEqual([
      { id: second.id, amount_usd: 7.25, status: "pending", created_at: expect.any(String), credited_at: null },
      { id: first.id, amount_usd: 2, status: "pending", created_at: expect.any(String), credited_at: null },
    ]);
  });
});

describe("the secret key", () => {
  it("never reaches the answer or the operator's log when Stripe refuses it and quotes part of it", async () => {
    const other = startStripeMock();
    const wrong = await dashboardGateway({ payments: { stripe: { ...other.config().payments.stripe, secret_key: "sk_test_thisisnotthemockskey1234" } } });
    const lines: string[] = [];
    const restore = events.redirect((l) => lines.push(l));
    try {
      const b = await registeredBrowser({ url: wrong.url });
      const res = await b.call("POST", "/api/topups", { amount_usd: 5 });
      const text = await res.text();
      expect(res.status).toBe(502);
      expect(text).toContain("[redacted]");
      for (const said of [text, ...lines]) {
        expect(said).not.toContain("sk_test_");
        expect(said).not.toContain("1234");
      }
      expect(lines.length).toBe(1);
    } finally {
      restore();
      await wrong.stop();
      other.stop();
    }
  });
});

describe("without [payments.stripe]", () => {
  let plain: TestGateway;
  beforeAll(async () => {
    plain = await dashboardGateway();
  });
  afterAll(() => plain.stop());

  it("says that top-ups are off, with the account's list and no support contact when none is set", async () => {
    const b = await registeredBrowser({ url: plain.url });
    expect(await body(await b.call("GET", "/api/topups"))).toEqual({ object: "topups", enabled: false, minimum_usd: 1, support_contact: null, data: [] });
  });

  it("refuses a top-up with payments_not_configured, saying that the operator credits balances", async () => {
    const b = await registeredBrowser({ url: plain.url });
    const err = await expectError(await b.call("POST", "/api/topups", { amount_usd: 5 }), 404, "payments_not_configured");
    expect(err.message).toContain("the operator credits balances");
    expect(err.message).toContain("a code can be redeemed on the top-up page");
    expect(err.message).not.toContain("gateway ");
  });

  it("refuses a webhook with payments_not_configured", async () => {
    const res = await fetch(`${plain.url}/api/stripe/webhook`, { method: "POST", headers: { "stripe-signature": "t=1,v1=00" }, body: "{}" });
    await expectError(res, 404, "payments_not_configured");
  });
});
