import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { body, dashboardGateway, freshEmail, holderOn, refusedWith } from "../api/support.ts";
import type { TestGateway } from "../support/gateway.ts";
import { fragmentTokenIn, mailsTo, mailTo, noticeGateway, verifiedHolder, type NoticeRig } from "./support.ts";

// A change of address (docs/dashboard.md#change-of-email): the current password, then under [email] a
// link to the new address; only its use changes the address, which is then verified, and the old
// address is told. Without [email] the password alone changes it.

// Registrations and logins hash with Argon2id: seconds each on a loaded machine.
setDefaultTimeout(30_000);

let rig: NoticeRig;
beforeAll(async () => {
  rig = await noticeGateway();
});
afterAll(() => rig.stop());

type Holder = Awaited<ReturnType<typeof verifiedHolder>>;

/** Asks for `next` as the holder's address; the confirmation link's token. */
async function askFor(h: Holder, next: string): Promise<string> {
  const before = rig.smtp.mails.length;
  const res = await h.b.call("POST", "/api/me/email", { new_email: next, password: h.password });
  expect(res.status).toBe(200);
  expect(await body(res)).toEqual({ email_changed: false, confirmation_sent: true, email: h.email });
  return fragmentTokenIn((await mailTo(rig, next, before)).text, "confirm-email");
}

const confirm = (token: string) => rig.browser().call("POST", "/api/me/email/confirm", { token });

describe("a change of address under [email]", () => {
  test("mails a link to the new address and changes nothing until it is used", async () => {
    const h = await verifiedHolder(rig);
    await askFor(h, freshEmail());
    expect(await body(await h.b.call("GET", "/api/me"))).toMatchObject({ email: h.email, email_verified: true });
  });

  test("confirmed, makes the new address the account's, verified, and tells the old one", async () => {
    const h = await verifiedHolder(rig);
    const next = freshEmail();
    const token = await askFor(h, next);
    const before = rig.smtp.mails.length;
    const res = await confirm(token);
    expect(await body(res)).toEqual({ email_changed: true, confirmation_sent: false, email: next });
    expect(await body(await h.b.call("GET", "/api/me"))).toMatchObject({ email: next, email_verified: true });
    expect((await mailTo(rig, h.email, before)).text).toContain(`changed from ${h.email} to ${next}`);
    expect((await rig.browser().call("POST", "/api/login", { email: next, password: h.password })).status).toBe(200);
    await refusedWith(await rig.browser().call("POST", "/api/login", { email: h.email, password: h.password }), 401, "invalid_credentials");
  });

  test("a confirmation link works once", async () => {
    const h = await verifiedHolder(rig);
    const token = await askFor(h, freshEmail());
    expect((await confirm(token)).status).toBe(200);
    await refusedWith(await confirm(token), 400, "invalid_email_change");
  });

  test("an expired confirmation link is refused and changes nothing", async () => {
    const h = await verifiedHolder(rig);
    const token = await askFor(h, freshEmail());
    rig.gw.services.db!.$client.run("UPDATE account_links SET expires_at = ? WHERE account_id = ?", [Date.now() - 1, h.id]);
    await refusedWith(await confirm(token), 400, "invalid_email_change");
    expect(await body(await h.b.call("GET", "/api/me"))).toMatchObject({ email: h.email });
  });

  test("a wrong password is refused 401 and mails nothing", async () => {
    const h = await verifiedHolder(rig);
    const next = freshEmail();
    await refusedWith(await h.b.call("POST", "/api/me/email", { new_email: next, password: "not the password" }), 401, "invalid_credentials");
    await rig.gw.services.notices.drain(5_000);
    expect(mailsTo(rig, next)).toHaveLength(0);
  });

  test("an address another account has, or no address at all, is refused 400", async () => {
    const h = await verifiedHolder(rig);
    const other = await verifiedHolder(rig);
    await refusedWith(await h.b.call("POST", "/api/me/email", { new_email: other.email.toUpperCase(), password: h.password }), 400, "invalid_request");
    await refusedWith(await h.b.call("POST", "/api/me/email", { new_email: "no address", password: h.password }), 400, "invalid_request");
    await refusedWith(await h.b.call("POST", "/api/me/email", { new_email: h.email, password: h.password }), 400, "invalid_request");
  });

  test("an address registered meanwhile is refused when the link is used", async () => {
    const h = await verifiedHolder(rig);
    const next = freshEmail();
    const token = await askFor(h, next);
    expect((await rig.browser().register(next)).res.status).toBe(201);
    await refusedWith(await confirm(token), 400, "invalid_request");
    expect(await body(await h.b.call("GET", "/api/me"))).toMatchObject({ email: h.email });
  });

  test("a second request within a minute is refused 429", async () => {
    const h = await verifiedHolder(rig);
    await askFor(h, freshEmail());
    await refusedWith(await h.b.call("POST", "/api/me/email", { new_email: freshEmail(), password: h.password }), 429, "rate_limit");
  });

  test("of an account whose registration was never verified verifies it, with its starting credit", async () => {
    const b = rig.browser();
    const { email, password } = await b.register();
    await mailTo(rig, email);
    const h = { b, id: 0, email, password };
    const token = await askFor(h, freshEmail());
    const before = rig.smtp.mails.length;
    expect((await confirm(token)).status).toBe(200);
    expect(await body(await b.call("GET", "/api/me"))).toMatchObject({ email_verified: true, balance_usd: 1 });
    // The old address was never shown to be the holder's: it is told nothing.
    await rig.gw.services.notices.drain(5_000);
    expect(mailsTo(rig, email, before)).toHaveLength(0);
  });

  test("confirmed, ends a reset link mailed to the old address", async () => {
    const h = await verifiedHolder(rig);
    const before = rig.smtp.mails.length;
    await rig.browser().call("POST", "/api/password/forgot", { email: h.email });
    const reset = fragmentTokenIn((await mailTo(rig, h.email, before)).text, "reset");
    expect((await confirm(await askFor(h, freshEmail()))).status).toBe(200);
    await refusedWith(await rig.browser().call("POST", "/api/password/reset", { token: reset, password: "from the old mailbox" }), 400, "invalid_reset_token");
  });

  // Before, the link outlived the closure: used afterwards, it gave the anonymised row (closed-account-ID)
  // the new address back, and took that address from whoever would register it.
  test("pending, is ended by closing the account: the closed account gets no address back", async () => {
    const h = await verifiedHolder(rig);
    const next = freshEmail();
    const token = await askFor(h, next);
    const closed = await h.b.call("POST", "/api/me/close", { password: h.password, confirm: h.email, forfeit_usd: 1 });
    expect(closed.status).toBe(200);
    await refusedWith(await confirm(token), 400, "invalid_email_change");
    expect((await rig.gw.services.accounts.profileOf(h.id))!.email).toBe(`closed-account-${h.id}`);
    expect((await rig.browser().register(next)).res.status).toBe(201);
  });

  test("pending, is ended by a password reset", async () => {
    const h = await verifiedHolder(rig);
    const change = await askFor(h, freshEmail());
    const before = rig.smtp.mails.length;
    await rig.browser().call("POST", "/api/password/forgot", { email: h.email });
    const reset = fragmentTokenIn((await mailTo(rig, h.email, before)).text, "reset");
    expect((await rig.browser().call("POST", "/api/password/reset", { token: reset, password: "taken back now" })).status).toBe(200);
    await refusedWith(await confirm(change), 400, "invalid_email_change");
  });
});

describe("a change of address without [email]", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await dashboardGateway();
  });
  afterAll(() => gw.stop());

  test("changes it at once with the password", async () => {
    const h = await holderOn(gw);
    const next = freshEmail();
    const res = await h.b.call("POST", "/api/me/email", { new_email: next, password: "correct horse" });
    expect(await body(res)).toEqual({ email_changed: true, confirmation_sent: false, email: next });
    expect(await body(await h.b.call("GET", "/api/me"))).toMatchObject({ email: next });
  });
});
