import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { body, refusedWith } from "../api/support.ts";
import { linkIn, noticeGateway, type NoticeRig } from "./support.ts";

// Address verification under [email] (docs/dashboard.md#address-verification): a registration opens
// at 0, its starting credit granted when the emailed link's page POSTs the token, once.

let rig: NoticeRig;
beforeAll(async () => {
  rig = await noticeGateway();
});
afterAll(() => rig.stop());

const registrationCredits = (accountId: number) =>
  rig.gw.services.db!.$client.query("SELECT amount_nano AS v FROM ledger_entries WHERE account_id = ? AND kind = 'registration_credit'").all(accountId) as { v: number }[];

async function registered() {
  const b = rig.browser();
  const before = rig.smtp.mails.length;
  const { email, res } = await b.register();
  expect(res.status).toBe(201);
  const me = await body(res);
  const [mail] = (await rig.smtp.waitFor(before + 1)).slice(before);
  return { b, email, me, mail: mail!, ...linkIn(mail!.text) };
}

describe("registration under [email]", () => {
  test("opens the account at 0 and emails a verification link to the address", async () => {
    const { email, me, mail, link } = await registered();
    expect(me).toMatchObject({ balance_usd: 0, email_verified: false, verification_sent: true });
    expect(mail.to).toEqual([email]);
    expect(mail.user).toBe("gw");
    expect(registrationCredits(me.id)).toEqual([]);
    // The link opens the dashboard's page (GET verifies nothing: a prefetch is harmless).
    const page = await fetch(rig.gw.url + new URL(link).pathname + new URL(link).search);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(registrationCredits(me.id)).toEqual([]);
  });

  test("the link's token POSTed grants exactly the starting credit once, even twice at once", async () => {
    const { b, me, token } = await registered();
    const other = rig.browser();
    const answers = await Promise.all([other.call("POST", "/api/verify", { token }), other.call("POST", "/api/verify", { token })]);
    expect(answers.map((r) => r.status).sort()).toEqual([200, 400]);
    const ok = answers.find((r) => r.status === 200)!;
    expect(await body(ok)).toMatchObject({ verified: true, starting_credit_usd: 1 });
    await refusedWith(answers.find((r) => r.status === 400)!, 400, "invalid_verification");
    await refusedWith(await other.call("POST", "/api/verify", { token }), 400, "invalid_verification");
    expect(registrationCredits(me.id)).toEqual([{ v: 1_000_000_000 }]);
    expect(await body(await b.call("GET", "/api/me"))).toMatchObject({ balance_usd: 1, email_verified: true });
  });

  test("an expired link is refused and grants nothing", async () => {
    const { me, token } = await registered();
    rig.gw.services.db!.$client.run("UPDATE email_verifications SET expires_at = ? WHERE account_id = ?", [Date.now() - 1, me.id]);
    await refusedWith(await rig.browser().call("POST", "/api/verify", { token }), 400, "invalid_verification");
    expect(registrationCredits(me.id)).toEqual([]);
  });

  test("a resend is throttled to one a minute, and its link replaces the old one", async () => {
    const { b, me, token: old } = await registered();
    const throttled = await b.call("POST", "/api/verify/resend");
    await refusedWith(throttled, 429, "rate_limit");
    expect(Number(throttled.headers.get("retry-after"))).toBeGreaterThan(0);
    rig.gw.services.db!.$client.run("UPDATE email_verifications SET sent_at = sent_at - 61000 WHERE account_id = ?", [me.id]);
    const before = rig.smtp.mails.length;
    expect((await b.call("POST", "/api/verify/resend")).status).toBe(200);
    const { token } = linkIn((await rig.smtp.waitFor(before + 1))[before]!.text);
    expect(token).not.toBe(old);
    await refusedWith(await rig.browser().call("POST", "/api/verify", { token: old }), 400, "invalid_verification");
    expect((await rig.browser().call("POST", "/api/verify", { token })).status).toBe(200);
    await refusedWith(await b.call("POST", "/api/verify/resend"), 409, "already_verified");
    expect(registrationCredits(me.id)).toEqual([{ v: 1_000_000_000 }]);
  });

  test("the day's registration ceiling applies when the credit is granted", async () => {
    const { b, token } = await registered();
    // The whole day's ceiling given out already by other verifications.
    const day = new Date().toISOString().slice(0, 10);
    rig.gw.services.db!.$client.run("INSERT OR REPLACE INTO settings (name, value) VALUES (?, ?)", [`registration_credit:${day}`, String(50_000_000_000)]);
    const res = await rig.browser().call("POST", "/api/verify", { token });
    expect(await body(res)).toMatchObject({ verified: true, starting_credit_usd: 0, starting_credit_limited: true });
    expect(await body(await b.call("GET", "/api/me"))).toMatchObject({ balance_usd: 0, email_verified: true });
  });
});
