import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { generate } from "otplib";
import type { TestGateway } from "../support/gateway.ts";
import { sqlAll, sqlGet } from "../support/keyed.ts";
import { adminOn, body, Browser, dashboardGateway, holderOn, refusedWith } from "./support.ts";
import { codeAt, earlyInStep, enrolled, loginFirstStep } from "../support/two-factor.ts";

// Two-factor login over real HTTP (docs/dashboard.md#two-factor-login): codes computed here with the
// same library from the secret the setup answered.

// Each login hashes a password with Argon2id: seconds a test on a loaded machine.
setDefaultTimeout(30_000);

let gw: TestGateway;
beforeAll(async () => {
  gw = await dashboardGateway();
});
afterAll(() => gw.stop());

describe("enrolment", () => {
  it("setup answers a secret and its otpauth URI, and a login still needs no code until enabled", async () => {
    const { b, email } = await holderOn(gw);
    const res = await b.call("POST", "/api/me/2fa/setup");
    expect(res.status).toBe(200);
    const s = await body(res);
    expect(s.secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(s.otpauth_uri).toStartWith("otpauth://totp/");
    expect(s.otpauth_uri).toContain(`secret=${s.secret}`);
    expect(s.enabled).toBe(false);
    expect(s.qr_code).toStartWith("data:image/svg+xml;base64,");
    expect(Buffer.from(s.qr_code.split(",")[1], "base64").toString()).toStartWith("<svg ");
    const again = new Browser(gw.url);
    const login = await again.call("POST", "/api/login", { email, password: "correct horse" });
    expect(await body(login)).toMatchObject({ object: "account", two_factor: false });
  });

  it("enable with the password and a current code turns it on and answers 10 recovery codes, stored only as hashes", async () => {
    const h = await enrolled(gw);
    expect(h.recovery).toHaveLength(10);
    expect(new Set(h.recovery).size).toBe(10);
    expect(await body(await h.b.call("GET", "/api/me"))).toMatchObject({ two_factor: true });
    const stored = JSON.stringify(sqlAll(gw, "SELECT * FROM recovery_codes WHERE account_id = ?", h.id));
    for (const code of h.recovery) expect(stored).not.toContain(code);
    expect(sqlAll(gw, "SELECT code_hash FROM recovery_codes WHERE account_id = ?", h.id)).toHaveLength(10);
  });

  it("enable with a wrong password or a wrong code is refused and leaves it off", async () => {
    const { b } = await holderOn(gw);
    const { secret } = await body(await b.call("POST", "/api/me/2fa/setup"));
    await refusedWith(await b.call("POST", "/api/me/2fa/enable", { password: "wrong horse", code: await codeAt(secret, 0) }), 401, "invalid_credentials");
    await refusedWith(await b.call("POST", "/api/me/2fa/enable", { password: "correct horse", code: "000000" === (await codeAt(secret, 0)) ? "111111" : "000000" }), 401, "invalid_second_factor");
    expect(await body(await b.call("GET", "/api/me"))).toMatchObject({ two_factor: false });
  });

  it("a code of the step before is accepted (±1 step), one of three steps before is not", async () => {
    const old = await holderOn(gw);
    const { secret } = await body(await old.b.call("POST", "/api/me/2fa/setup"));
    await refusedWith(await old.b.call("POST", "/api/me/2fa/enable", { password: "correct horse", code: await codeAt(secret, -90) }), 401, "invalid_second_factor");
    await earlyInStep();
    const ok = await old.b.call("POST", "/api/me/2fa/enable", { password: "correct horse", code: await codeAt(secret, -30) });
    expect(ok.status).toBe(200);
  });

  it("enable before any setup, or a second setup while on, is 409 two_factor_conflict", async () => {
    const { b } = await holderOn(gw);
    await refusedWith(await b.call("POST", "/api/me/2fa/enable", { password: "correct horse", code: "123456" }), 409, "two_factor_conflict");
    const h = await enrolled(gw);
    await refusedWith(await h.b.call("POST", "/api/me/2fa/setup"), 409, "two_factor_conflict");
  });

  it("enabling ends the account's other sessions and keeps this one", async () => {
    const { b, email, id } = await holderOn(gw);
    const other = new Browser(gw.url);
    await other.call("POST", "/api/login", { email, password: "correct horse" });
    expect((await other.call("GET", "/api/me")).status).toBe(200);
    const h = await enrolled(gw, { b, email, id });
    expect(h.sessionsEnded).toBe(1);
    await refusedWith(await other.call("GET", "/api/me"), 401, "no-session");
    expect((await b.call("GET", "/api/me")).status).toBe(200);
  });
});

describe("login with two-factor login on", () => {
  it("the right password opens no session: it answers a token for the code's step", async () => {
    const h = await enrolled(gw);
    const b = new Browser(gw.url);
    const res = await b.call("POST", "/api/login", { email: h.email, password: h.password });
    expect(res.status).toBe(200);
    const step = await body(res);
    expect(step).toMatchObject({ second_factor_required: true });
    expect(step.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Date.parse(step.expires_at) - Date.now()).toBeGreaterThan(4 * 60_000);
    expect(res.headers.get("set-cookie")).toBeNull();
    await refusedWith(await b.call("GET", "/api/me"), 401, "no-session");
  });

  it("the token with a current code opens the session", async () => {
    const h = await enrolled(gw);
    const { b, token } = await loginFirstStep(gw, h);
    const res = await b.call("POST", "/api/login/second-factor", { token, code: await codeAt(h.secret, 30) });
    expect(res.status).toBe(200);
    expect(await body(res)).toMatchObject({ object: "account", email: h.email, two_factor: true });
    expect((await b.call("GET", "/api/me")).status).toBe(200);
  });

  it("a code that opened a login does not open a second one (replay)", async () => {
    const h = await enrolled(gw);
    const code = await codeAt(h.secret, 30);
    const first = await loginFirstStep(gw, h);
    expect((await first.b.call("POST", "/api/login/second-factor", { token: first.token, code })).status).toBe(200);
    const second = await loginFirstStep(gw, h);
    await refusedWith(await second.b.call("POST", "/api/login/second-factor", { token: second.token, code }), 401, "invalid_second_factor");
  });

  it("the code enabling used does not open a login either", async () => {
    const h = await enrolled(gw);
    const { b, token } = await loginFirstStep(gw, h);
    await refusedWith(await b.call("POST", "/api/login/second-factor", { token, code: h.enablingCode }), 401, "invalid_second_factor");
  });

  it("a token opens one session: used again, even with a new code, it is 401 second_factor_expired", async () => {
    const h = await enrolled(gw);
    const { b, token } = await loginFirstStep(gw, h);
    expect((await b.call("POST", "/api/login/second-factor", { token, code: await codeAt(h.secret, 30) })).status).toBe(200);
    const thief = new Browser(gw.url);
    await refusedWith(await thief.call("POST", "/api/login/second-factor", { token, code: h.recovery[0] }), 401, "second_factor_expired");
    expect(thief.cookie).toBeNull();
  });

  it("a token past its 5 minutes is 401 second_factor_expired", async () => {
    const h = await enrolled(gw);
    const { b, token } = await loginFirstStep(gw, h);
    gw.services.db.$client.query("UPDATE login_challenges SET expires_at = ? WHERE account_id = ?").run(Date.now() - 1, h.id);
    await refusedWith(await b.call("POST", "/api/login/second-factor", { token, code: await codeAt(h.secret, 30) }), 401, "second_factor_expired");
  });

  it("a made-up token is 401 second_factor_expired", async () => {
    const b = new Browser(gw.url);
    await refusedWith(await b.call("POST", "/api/login/second-factor", { token: "x".repeat(43), code: "123456" }), 401, "second_factor_expired");
  });

  it("5 wrong codes are 401, then 429 even for the right code, and a new password login does not reset the count", async () => {
    const h = await enrolled(gw);
    const right = await codeAt(h.secret, 30);
    const wrong = right === "000000" ? "111111" : "000000";
    const { b, token } = await loginFirstStep(gw, h);
    for (let i = 0; i < 5; i++) await refusedWith(await b.call("POST", "/api/login/second-factor", { token, code: wrong }), 401, "invalid_second_factor");
    const res = await b.call("POST", "/api/login/second-factor", { token, code: right });
    await refusedWith(res, 429, "rate_limit");
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    const again = await loginFirstStep(gw, h);
    await refusedWith(await again.b.call("POST", "/api/login/second-factor", { token: again.token, code: right }), 429, "rate_limit");
  });

  it("20 wrong codes at once from 20 addresses: 5 are checked (401), 15 are 429", async () => {
    const h = await enrolled(gw);
    const wrong = (await codeAt(h.secret, 30)) === "000000" ? "111111" : "000000";
    const { token } = await loginFirstStep(gw, h);
    const answers = await Promise.all(Array.from({ length: 20 }, () => new Browser(gw.url).call("POST", "/api/login/second-factor", { token, code: wrong })));
    const counts: Record<number, number> = {};
    for (const r of answers) counts[r.status] = (counts[r.status] ?? 0) + 1;
    expect(counts).toEqual({ 401: 5, 429: 15 });
  });

  it("one code sent at once on two logins' tokens opens one session", async () => {
    const h = await enrolled(gw);
    const code = await codeAt(h.secret, 30);
    const [a, b] = await Promise.all([loginFirstStep(gw, h), loginFirstStep(gw, h)]);
    const answers = await Promise.all([a, b].map((x) => x.b.call("POST", "/api/login/second-factor", { token: x.token, code })));
    expect(answers.map((r) => r.status).sort()).toEqual([200, 401]);
  });

  it("a recovery code opens one login; the same code again is refused", async () => {
    const h = await enrolled(gw);
    const first = await loginFirstStep(gw, h);
    expect((await first.b.call("POST", "/api/login/second-factor", { token: first.token, code: h.recovery[3]!.toLowerCase() })).status).toBe(200);
    const second = await loginFirstStep(gw, h);
    await refusedWith(await second.b.call("POST", "/api/login/second-factor", { token: second.token, code: h.recovery[3] }), 401, "invalid_second_factor");
    expect(sqlGet<{ n: number }>(gw, "SELECT COUNT(*) AS n FROM recovery_codes WHERE account_id = ? AND used_at IS NULL", h.id).n).toBe(9);
  });

  it("a wrong password with two-factor login on is the usual 401 invalid_credentials, with no token", async () => {
    const h = await enrolled(gw);
    const b = new Browser(gw.url);
    const msg = await refusedWith(await b.call("POST", "/api/login", { email: h.email, password: "wrong horse" }), 401, "invalid_credentials");
    expect(msg).not.toContain("token");
  });
});

describe("disable", () => {
  it("needs the password and a code; afterwards a login needs no code", async () => {
    const h = await enrolled(gw);
    await refusedWith(await h.b.call("POST", "/api/me/2fa/disable", { password: "wrong horse", code: await codeAt(h.secret, 30) }), 401, "invalid_credentials");
    await refusedWith(await h.b.call("POST", "/api/me/2fa/disable", { password: h.password, code: "12345678" }), 401, "invalid_second_factor");
    const res = await h.b.call("POST", "/api/me/2fa/disable", { password: h.password, code: await codeAt(h.secret, 30) });
    expect(await body(res)).toEqual({ enabled: false });
    const b = new Browser(gw.url);
    expect(await body(await b.call("POST", "/api/login", { email: h.email, password: h.password }))).toMatchObject({ object: "account", two_factor: false });
    expect(sqlAll(gw, "SELECT * FROM recovery_codes WHERE account_id = ?", h.id)).toHaveLength(0);
  });

  it("takes a recovery code instead of a current code", async () => {
    const h = await enrolled(gw);
    const res = await h.b.call("POST", "/api/me/2fa/disable", { password: h.password, code: h.recovery[9] });
    expect(res.status).toBe(200);
    expect(await body(await h.b.call("GET", "/api/me"))).toMatchObject({ two_factor: false });
  });

  it("while it is off is 409 two_factor_conflict", async () => {
    const { b } = await holderOn(gw);
    await refusedWith(await b.call("POST", "/api/me/2fa/disable", { password: "correct horse", code: "123456" }), 409, "two_factor_conflict");
  });
});

describe("admin", () => {
  it("the accounts list says which accounts have two-factor login on", async () => {
    const admin = await adminOn(gw);
    const h = await enrolled(gw);
    const plain = await holderOn(gw);
    const list = await body(await admin.b.call("GET", "/api/admin/accounts?limit=200"));
    const of = (id: number) => list.data.find((a: { id: number }) => a.id === id);
    expect(of(h.id).two_factor).toBe(true);
    expect(of(plain.id).two_factor).toBe(false);
  });
});

// The library the test computes codes with agrees with an authenticator app's arithmetic (RFC 6238's vector, SHA-1, 6 digits).
it("codes are RFC 6238's: the SHA-1 test vector at 59 s is 287082", async () => {
  const secret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"; // "12345678901234567890" in base32
  expect(await generate({ secret, epoch: 59 })).toBe("287082");
});
