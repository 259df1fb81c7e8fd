import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { body, freshEmail, refusedWith } from "../api/support.ts";
import { gateway, tempInstallation } from "../support/cli.ts";
import { sqlGet } from "../support/keyed.ts";
import { codeAt, enrolled, loginFirstStep } from "../support/two-factor.ts";
import { fragmentTokenIn, mailsTo, mailTo, noticeGateway, verifiedHolder, type NoticeRig } from "./support.ts";

// Where the holder's account features meet (docs/reliability.md#where-the-holders-features-meet): a
// pending emailed link or login step outliving the closure or the operator's disable, and the
// credential rows a closure leaves behind.

// Registrations and logins hash with Argon2id: seconds each on a loaded machine.
setDefaultTimeout(60_000);

let rig: NoticeRig;
beforeAll(async () => {
  rig = await noticeGateway();
});
afterAll(() => rig.stop());

type Holder = Awaited<ReturnType<typeof verifiedHolder>>;

/** Asks for `next` as the holder's address; the confirmation link's token. */
async function askFor(h: Pick<Holder, "b" | "password">, next: string): Promise<string> {
  const before = rig.smtp.mails.length;
  expect((await h.b.call("POST", "/api/me/email", { new_email: next, password: h.password })).status).toBe(200);
  return fragmentTokenIn((await mailTo(rig, next, before)).text, "confirm-email");
}

/** The first mail to `to` since the `from`-th whose text contains `words`, waited for (other mails of the holder may come first). */
async function mailSaying(to: string, from: number, words: string): Promise<string> {
  const until = Date.now() + 10_000;
  for (;;) {
    const mail = mailsTo(rig, to, from).find((m) => m.text.includes(words));
    if (mail) return mail.text;
    if (Date.now() > until) throw new Error(`no mail to ${to} saying "${words}" within 10 s`);
    await Bun.sleep(10);
  }
}

async function resetLinkOf(h: { email: string }): Promise<string> {
  const before = rig.smtp.mails.length;
  await rig.browser().call("POST", "/api/password/forgot", { email: h.email });
  return fragmentTokenIn(await mailSaying(h.email, before, "#/reset"), "reset");
}

const confirm = (token: string) => rig.browser().call("POST", "/api/me/email/confirm", { token });
/** Closes the holder's account, forfeiting whatever its balance is (the starting credit of a verified one). */
async function close(h: { b: Holder["b"]; email: string; password: string }): Promise<Response> {
  const me = await body(await h.b.call("GET", "/api/me"));
  return h.b.call("POST", "/api/me/close", { password: h.password, confirm: h.email, forfeit_usd: me.balance_usd });
}
const row = (id: number) => rig.gw.services.accounts.findById(id);
const countOf = (table: string, id: number) => sqlGet<{ n: number }>(rig.gw, `SELECT count(*) AS n FROM ${table} WHERE account_id = ?`, id).n;

describe("a change of address pending at the closure", () => {
  test("is refused when confirmed after the closure, leaving the address anonymised and free", async () => {
    const h = await verifiedHolder(rig);
    const next = freshEmail();
    const token = await askFor(h, next);
    expect((await close(h)).status).toBe(200);
    await refusedWith(await confirm(token), 400, "invalid_email_change");
    expect((await row(h.id))!.email).toBe(`closed-account-${h.id}`);
    expect(await rig.gw.services.accounts.find(next)).toBeNull();
  });

  test("of a never-verified registration grants no starting credit to the closed account", async () => {
    const b = rig.browser();
    const { email, password, res } = await b.register();
    const id = ((await res.json()) as { id: number }).id;
    const token = await askFor({ b, password }, freshEmail());
    expect((await close({ b, email, password })).status).toBe(200);
    await refusedWith(await confirm(token), 400, "invalid_email_change");
    expect((await rig.gw.services.ledger.balance(id)).balanceNano).toBe(0);
  });

  test("is refused when confirmed while the operator has the account disabled", async () => {
    const h = await verifiedHolder(rig);
    const token = await askFor(h, freshEmail());
    await rig.gw.services.accounts.setDisabled(h.id, true);
    await refusedWith(await confirm(token), 403, "inactive");
    expect((await row(h.id))!.email).toBe(h.email);
  });
});

describe("a password reset pending at the closure", () => {
  test("is refused after the closure and sets no password", async () => {
    const h = await verifiedHolder(rig);
    const token = await resetLinkOf(h);
    expect((await close(h)).status).toBe(200);
    await refusedWith(await rig.browser().call("POST", "/api/password/reset", { token, password: "back from the dead" }), 400, "invalid_reset_token");
    expect((await rig.gw.services.accounts.loginOf(h.id))!.passwordHash).toBeNull();
  });
});

describe("the closure of an account with two-factor login", () => {
  test("deletes its secret, recovery codes and pending login steps", async () => {
    const h = await enrolled(rig.gw, await verifiedHolder(rig));
    await loginFirstStep(rig.gw, h, rig.browser());
    expect((await close(h)).status).toBe(200);
    expect([countOf("two_factor", h.id), countOf("recovery_codes", h.id), countOf("login_challenges", h.id)]).toEqual([0, 0, 0]);
  });

  test("ends a login waiting for its code: the code opens no session", async () => {
    const h = await enrolled(rig.gw, await verifiedHolder(rig));
    const step = await loginFirstStep(rig.gw, h, rig.browser());
    expect((await close(h)).status).toBe(200);
    await refusedWith(await step.b.call("POST", "/api/login/second-factor", { token: step.token, code: await codeAt(h.secret, 30) }), 401, "second_factor_expired");
  });
});

describe("a password reset of an account with two-factor login", () => {
  test("still asks for the code at the next login", async () => {
    const h = await enrolled(rig.gw, await verifiedHolder(rig));
    const token = await resetLinkOf(h);
    expect((await rig.browser().call("POST", "/api/password/reset", { token, password: "a new horse" })).status).toBe(200);
    const answer = await body(await rig.browser().call("POST", "/api/login", { email: h.email, password: "a new horse" }));
    expect(answer.second_factor_required).toBe(true);
  });
});

describe("the operator's webhook at a change of address", () => {
  test("gets account.email_changed with the new and the previous address once the link is confirmed", async () => {
    const h = await verifiedHolder(rig);
    const next = freshEmail();
    expect((await confirm(await askFor(h, next))).status).toBe(200);
    const event = await rig.hook.waitFor("account.email_changed", { account_id: h.id });
    expect(event.event.data).toEqual({ account_id: h.id, email: next, previous_email: h.email });
  });
});

describe("two-factor login turned on or off", () => {
  test("is mailed to the account's address when the holder turns it on, and again when off", async () => {
    const h = await enrolled(rig.gw, await verifiedHolder(rig));
    expect(await mailSaying(h.email, 0, "Two-factor login")).toContain("was turned on: each login now asks for a code");
    const before = rig.smtp.mails.length;
    expect((await h.b.call("POST", "/api/me/2fa/disable", { password: h.password, code: await codeAt(h.secret, 30) })).status).toBe(200);
    expect(await mailSaying(h.email, before, "Two-factor login")).toContain("was turned off: a login asks for the password only");
  });

  test("removed by the operator's --reset-2fa is mailed to the holder", async () => {
    const h = await enrolled(rig.gw, await verifiedHolder(rig));
    const install = tempInstallation(`[server]\npublic_url = "https://gateway.test"\n\n[email]\nsmtp_url = "${rig.smtp.url("gw", "smtp-pass-1")}"\nfrom = "Gateway <gateway@test.local>"\n`);
    try {
      const before = rig.smtp.mails.length;
      const r = await gateway(["account", "update", "--email", h.email, "--reset-2fa", "--config", install.config, "--db", rig.gw.config.database]);
      expect(r.code).toBe(0);
      expect(await mailSaying(h.email, before, "removed by the gateway's operator")).toStartWith("From: Gateway");
    } finally {
      install.remove();
    }
  });
});

describe("the holder's mails after a change of address", () => {
  test("go to the new address: the reset link, and a recovery code's use; the old address gets neither", async () => {
    const h = await enrolled(rig.gw, await verifiedHolder(rig));
    const next = freshEmail();
    expect((await confirm(await askFor(h, next))).status).toBe(200);
    const before = rig.smtp.mails.length;
    await rig.browser().call("POST", "/api/password/forgot", { email: next });
    await rig.browser().call("POST", "/api/password/forgot", { email: h.email });
    await mailSaying(next, before, "#/reset");
    const step = await loginFirstStep(rig.gw, { email: next, password: h.password }, rig.browser());
    expect((await step.b.call("POST", "/api/login/second-factor", { token: step.token, code: h.recovery[0] })).status).toBe(200);
    await mailSaying(next, before, "recovery codes of your gateway account was just used");
    await rig.gw.services.notices.drain(5_000);
    // The old address hears only that the address changed (docs/dashboard.md#change-of-email).
    expect(mailsTo(rig, h.email, before).filter((m) => /#\/reset|recovery code/.test(m.text))).toEqual([]);
  });
});

describe("a change of address pending when the password changes", () => {
  // Whoever had the old password (and a session) may have asked for it, to an address of theirs.
  test("is ended by the holder's change of password on the account page", async () => {
    const h = await verifiedHolder(rig);
    const token = await askFor(h, freshEmail());
    expect((await h.b.call("POST", "/api/password", { current_password: h.password, new_password: "a fresh horse" })).status).toBe(200);
    await refusedWith(await confirm(token), 400, "invalid_email_change");
    expect((await row(h.id))!.email).toBe(h.email);
  });

  test("is ended by the admin's Set password", async () => {
    const h = await verifiedHolder(rig);
    const token = await askFor(h, freshEmail());
    const admin = await verifiedHolder(rig);
    await rig.gw.services.accounts.setAdmin(admin.id, true);
    expect((await admin.b.call("PUT", `/api/admin/accounts/${h.id}/password`, { password: "set by the operator" })).status).toBe(200);
    await refusedWith(await confirm(token), 400, "invalid_email_change");
  });

  test("is ended by the operator's account update --password-stdin", async () => {
    const h = await verifiedHolder(rig);
    const token = await askFor(h, freshEmail());
    const r = await gateway(["account", "update", "--email", h.email, "--password-stdin", "--db", rig.gw.config.database], { stdin: "set on the command line\n" });
    expect(r.code).toBe(0);
    await refusedWith(await confirm(token), 400, "invalid_email_change");
  });
});

describe("the audit trail of the holder's credentials", () => {
  test("has a row for each change the holder makes: password on the account page, address, two-factor, closure", async () => {
    const h = await verifiedHolder(rig);
    expect((await h.b.call("POST", "/api/password", { current_password: h.password, new_password: "correct horse" })).status).toBe(200);
    const next = freshEmail();
    expect((await confirm(await askFor({ b: h.b, password: "correct horse" }, next))).status).toBe(200);
    await enrolled(rig.gw, { b: h.b, id: h.id, email: next });
    expect((await close({ b: h.b, email: next, password: "correct horse" })).status).toBe(200);
    const rows = rig.gw.services.db!.$client.query("SELECT actor_account_id AS actor, action FROM audit_log WHERE target_account_id = ? ORDER BY id").all(h.id);
    expect(rows).toEqual(["password_changed", "email_changed", "two_factor_enabled", "account_closed"].map((action) => ({ actor: h.id, action })));
  });
});

describe("a login waiting for its code when the password changes", () => {
  // The login's first step proved the old password; the new one is what a login needs now.
  test("opens no session after a password reset, even with a right code", async () => {
    const h = await enrolled(rig.gw, await verifiedHolder(rig));
    const thief = await loginFirstStep(rig.gw, h, rig.browser());
    const token = await resetLinkOf(h);
    expect((await rig.browser().call("POST", "/api/password/reset", { token, password: "taken back now" })).status).toBe(200);
    await refusedWith(await thief.b.call("POST", "/api/login/second-factor", { token: thief.token, code: await codeAt(h.secret, 30) }), 401, "second_factor_expired");
  });

  test("opens no session after the holder's change of password on the account page", async () => {
    const h = await enrolled(rig.gw, await verifiedHolder(rig));
    const thief = await loginFirstStep(rig.gw, h, rig.browser());
    expect((await h.b.call("POST", "/api/password", { current_password: h.password, new_password: "taken back now" })).status).toBe(200);
    await refusedWith(await thief.b.call("POST", "/api/login/second-factor", { token: thief.token, code: await codeAt(h.secret, 30) }), 401, "second_factor_expired");
  });
});

describe("a login waiting for its code across the operator's disable and enable", () => {
  test("opens no session once the account is enabled again, as the sessions before the disable", async () => {
    const h = await enrolled(rig.gw, await verifiedHolder(rig));
    const thief = await loginFirstStep(rig.gw, h, rig.browser());
    const admin = await verifiedHolder(rig);
    await rig.gw.services.accounts.setAdmin(admin.id, true);
    expect((await admin.b.call("POST", `/api/admin/accounts/${h.id}/disable`)).status).toBe(200);
    expect((await admin.b.call("POST", `/api/admin/accounts/${h.id}/enable`)).status).toBe(200);
    await refusedWith(await thief.b.call("POST", "/api/login/second-factor", { token: thief.token, code: await codeAt(h.secret, 30) }), 401, "second_factor_expired");
  });

  test("opens no session once the operator's CLI enabled the account again", async () => {
    const h = await enrolled(rig.gw, await verifiedHolder(rig));
    const thief = await loginFirstStep(rig.gw, h, rig.browser());
    for (const sub of ["disable", "enable"]) expect((await gateway(["account", sub, "--email", h.email, "--db", rig.gw.config.database])).code).toBe(0);
    await refusedWith(await thief.b.call("POST", "/api/login/second-factor", { token: thief.token, code: await codeAt(h.secret, 30) }), 401, "second_factor_expired");
  });
});

describe("a change of the password on the account page", () => {
  test("is mailed to the holder, as a reset is: a session taken with the old password could make it", async () => {
    const h = await verifiedHolder(rig);
    const before = rig.smtp.mails.length;
    const changed = await h.b.call("POST", "/api/password", { current_password: h.password, new_password: "another horse battery staple" });
    expect(changed.status).toBe(200);
    expect(await mailSaying(h.email, before, "changed on the account page")).toContain("/#/forgot");
  });
});
