import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { body, freshEmail, refusedWith } from "../api/support.ts";
import { sqlGet } from "../support/keyed.ts";
import { codeAt, enrolled, loginFirstStep } from "../support/two-factor.ts";
import { fragmentTokenIn, mailTo, noticeGateway, verifiedHolder, type NoticeRig } from "./support.ts";

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

async function resetLinkOf(h: Holder): Promise<string> {
  const before = rig.smtp.mails.length;
  await rig.browser().call("POST", "/api/password/forgot", { email: h.email });
  return fragmentTokenIn((await mailTo(rig, h.email, before)).text, "reset");
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
