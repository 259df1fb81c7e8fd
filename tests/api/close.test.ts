import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { expectError } from "../support/errors.ts";
import { noticeGateway, type NoticeRig } from "../notices/support.ts";
import { body } from "./support.ts";
import { enrolled } from "../support/two-factor.ts";

// POST /api/me/close's refusals and what it tells (docs/dashboard.md#closing-the-account): each
// refusal changes nothing; the admin page answers a closed account's credit and enable 409.

setDefaultTimeout(60_000);

const PASSWORD = "correct horse";
let rig: NoticeRig;
let n = 0;
beforeAll(async () => {
  rig = await noticeGateway();
});
afterAll(() => rig.stop());

/** A logged-in holder of a fresh, verified account with `nano`. */
async function holder(nano = 0) {
  const b = rig.browser();
  const email = `close${process.pid}-${++n}@test.local`;
  // Registered under [email]: verified straight in the file, as the link would.
  const reg = await body(await b.call("POST", "/api/register", { email, password: PASSWORD }));
  rig.gw.services.db!.$client.run("UPDATE email_verifications SET verified_at = 1 WHERE account_id = ?", [reg.id]);
  if (nano > 0) await rig.gw.services.ledger.credit(reg.id, nano, "operator_credit", null);
  return { b, id: reg.id as number, email };
}

const balanceOf = async (id: number) => (await rig.gw.services.ledger.balance(id)).balanceNano;

describe("POST /api/me/close", () => {
  it("refuses a wrong password 401 invalid_credentials and changes nothing", async () => {
    const h = await holder(1e9);
    await expectError(await h.b.call("POST", "/api/me/close", { password: "wrong horse", confirm: h.email, forfeit_usd: 1 }), 401, "invalid_credentials", "authentication_error");
    expect(await balanceOf(h.id)).toBe(1e9);
    expect((await h.b.call("GET", "/api/me")).status).toBe(200);
  });

  it("refuses a confirmation that is not the account's email 400 invalid_request", async () => {
    const h = await holder();
    await expectError(await h.b.call("POST", "/api/me/close", { password: PASSWORD, confirm: "yes" }), 400, "invalid_request");
    expect((await rig.gw.services.accounts.findById(h.id))!.closedAt).toBeNull();
  });

  it("refuses an admin account 409 admin_account", async () => {
    const h = await holder();
    await rig.gw.services.accounts.setAdmin(h.id, true);
    await expectError(await h.b.call("POST", "/api/me/close", { password: PASSWORD, confirm: h.email }), 409, "admin_account");
    expect((await rig.gw.services.accounts.findById(h.id))!.closedAt).toBeNull();
  });

  it("sends the account.closed event and a confirmation mail to the old address", async () => {
    const h = await holder(2e9);
    const res = await h.b.call("POST", "/api/me/close", { password: PASSWORD, confirm: h.email, forfeit_usd: "2" });
    expect(res.status).toBe(200);
    const event = await rig.hook.waitFor("account.closed", { account_id: h.id });
    expect(event.event.data).toMatchObject({ email: h.email, forfeited_usd: 2 });
    const deadline = Date.now() + 10_000;
    const mail = () => rig.smtp.mails.find((m) => m.to.includes(h.email) && m.text.includes("closed"));
    while (!mail() && Date.now() < deadline) await Bun.sleep(20);
    expect(mail()!.text).toContain("2 USD was forfeited");
  });

  it("leaves the admin page showing the account closed, refusing its credit and enable 409 account_closed", async () => {
    const h = await holder();
    const admin = await holder();
    await rig.gw.services.accounts.setAdmin(admin.id, true);
    expect((await h.b.call("POST", "/api/me/close", { password: PASSWORD, confirm: h.email })).status).toBe(200);
    const shown = await body(await admin.b.call("GET", `/api/admin/accounts/${h.id}`));
    expect(shown.account).toMatchObject({ closed: true, disabled: true, email: `closed-account-${h.id}`, balance_usd: 0 });
    await expectError(await admin.b.call("POST", `/api/admin/accounts/${h.id}/credit`, { usd: 1 }), 409, "account_closed");
    await expectError(await admin.b.call("POST", `/api/admin/accounts/${h.id}/enable`), 409, "account_closed");
    expect(await balanceOf(h.id)).toBe(0);
  });

  // Before, the secret and the codes stayed: the operator's list said two-factor "on" for an account
  // nobody can log into, and the database kept a credential of it.
  it("removes the account's two-factor login: its secret and recovery codes", async () => {
    const h = await holder();
    await enrolled(rig.gw, h);
    expect((await h.b.call("POST", "/api/me/close", { password: PASSWORD, confirm: h.email })).status).toBe(200);
    expect(await rig.gw.services.twoFactor.stateOf(h.id)).toBeNull();
    expect(rig.gw.services.db!.$client.query("SELECT count(*) AS n FROM recovery_codes WHERE account_id = ?").get(h.id)).toEqual({ n: 0 });
  });
});
