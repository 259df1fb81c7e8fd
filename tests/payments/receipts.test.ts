import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { expectError } from "../support/errors.ts";
import { startStripeMock, type StripeMock } from "../support/stripe-mock.ts";
import { noticeGateway, SITE, type NoticeRig } from "../notices/support.ts";

// docs/dashboard.md#receipts over real HTTP: a credited card top-up's printable receipt, to its
// holder (and admins) only, and mailed under [email] when the webhook credits it.

setDefaultTimeout(60_000);

const CONTACT = "billing@example.test";
let rig: NoticeRig;
let stripe: StripeMock;
let n = 0;

beforeAll(async () => {
  stripe = startStripeMock();
  rig = await noticeGateway({ config: { ...stripe.config(), dashboard: { support_contact: CONTACT } } });
});
afterAll(async () => {
  await rig.stop();
  stripe.stop();
});

/** A logged-in holder of a fresh account (no address check pending, so mail reaches it). */
async function holder() {
  const email = `receipt${process.pid}-${++n}@test.local`;
  const acc = await rig.gw.services.accounts.create(email, { balanceNano: 0 });
  const b = rig.browser();
  b.cookie = (await rig.gw.services.sessions.open(acc.id)).token;
  // The dashboard is served at an https public_url: the cookie has its __Host- name there.
  b.cookieName = "__Host-gw_session";
  return { b, id: acc.id, email };
}

/** A 12.50 USD top-up opened by `b`, paid and credited through the signed webhook: its session id and PaymentIntent id. */
async function paidTopUp(b: ReturnType<NoticeRig["browser"]>): Promise<{ session: string; paymentRef: string }> {
  const opened = (await (await b.call("POST", "/api/topups", { amount_usd: 12.5 })).json()) as { id: string };
  const delivered = await stripe.deliver(rig.gw.url, stripe.event(opened.id).payload);
  expect(delivered.status).toBe(200);
  return { session: opened.id, paymentRef: stripe.sessions.get(opened.id)!.payment_intent! };
}

describe("GET /api/topups/:id/receipt", () => {
  it("shows its holder a printable receipt: number, date in UTC, amount, payment reference, email, operator", async () => {
    const h = await holder();
    const { session, paymentRef } = await paidTopUp(h.b);
    const res = await h.b.call("GET", `/api/topups/${session}/receipt`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("text/html");
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
    const html = await res.text();
    const entry = rig.gw.services.db!.$client.query("SELECT id FROM ledger_entries WHERE account_id = ? AND kind = 'top_up'").get(h.id) as { id: number };
    for (const part of [`R-${String(entry.id).padStart(6, "0")}`, "12.50 USD", paymentRef, session, h.email, SITE, CONTACT]) expect(html).toContain(part);
    expect(html).toMatch(/\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC/);
    expect(html).not.toContain("<script");
  });

  it("answers another holder's receipt 404 topup_not_found, as an unknown id", async () => {
    const owner = await holder();
    const { session } = await paidTopUp(owner.b);
    const other = await holder();
    await expectError(await other.b.call("GET", `/api/topups/${session}/receipt`), 404, "topup_not_found");
    await expectError(await other.b.call("GET", `/api/topups/cs_test_unknown/receipt`), 404, "topup_not_found");
  });

  it("answers a top-up not credited yet 404 topup_not_found", async () => {
    const h = await holder();
    const opened = (await (await h.b.call("POST", "/api/topups", { amount_usd: 3 })).json()) as { id: string };
    await expectError(await h.b.call("GET", `/api/topups/${opened.id}/receipt`), 404, "topup_not_found");
  });

  it("shows an admin any holder's receipt", async () => {
    const owner = await holder();
    const { session } = await paidTopUp(owner.b);
    const admin = await holder();
    await rig.gw.services.accounts.setAdmin(admin.id, true);
    const res = await admin.b.call("GET", `/api/topups/${session}/receipt`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain(owner.email);
  });

  it("shows an admin a closed account's receipt, naming its anonymised address and no longer the old one", async () => {
    const owner = await holder();
    const { session, paymentRef } = await paidTopUp(owner.b);
    await rig.gw.services.accounts.close(owner.id, 12_500_000_000);
    const admin = await holder();
    await rig.gw.services.accounts.setAdmin(admin.id, true);
    const res = await admin.b.call("GET", `/api/topups/${session}/receipt`);
    expect(res.status).toBe(200);
    const html = await res.text();
    for (const part of ["12.50 USD", paymentRef, `closed-account-${owner.id}`]) expect(html).toContain(part);
    expect(html).not.toContain(owner.email);
  });

  it("mails the receipt to the holder when the webhook credits the top-up, under [email]", async () => {
    const h = await holder();
    const { paymentRef } = await paidTopUp(h.b);
    // Earlier tests' receipts may still be arriving: this holder's is the one looked for.
    const deadline = Date.now() + 10_000;
    const mine = () => rig.smtp.mails.find((m) => m.to.includes(h.email));
    while (!mine() && Date.now() < deadline) await Bun.sleep(20);
    const mail = mine()!;
    expect(mail.text).toContain("Receipt number");
    expect(mail.text).toContain("12.50 USD");
    expect(mail.text).toContain(paymentRef);
  });
});
