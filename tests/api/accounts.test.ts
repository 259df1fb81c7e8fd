import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import type { TestGateway } from "../support/gateway.ts";
import { ledgerRows, sqlGet } from "../support/keyed.ts";
import { body, Browser, dashboardGateway, freshEmail } from "./support.ts";

// Every login and registration hashes a password with Argon2id: a few seconds a test on a loaded machine.
setDefaultTimeout(30_000);

// docs/dashboard.md: register, log in and out, the password, the account's money, under /api/.

let gw: TestGateway;
beforeAll(async () => {
  gw = await dashboardGateway();
});
afterAll(() => gw.stop());

const browser = () => new Browser(gw.url);
const accountIdOf = (email: string) => sqlGet<{ id: number }>(gw, "SELECT id FROM accounts WHERE email = ?", email).id;

describe("POST /api/register", () => {
  it("opens an account with the starting 1 USD and answers 201 with it, logged in", async () => {
    const b = browser();
    const { email, res } = await b.register();
    expect(res.status).toBe(201);
    expect(await body(res)).toMatchObject({ object: "account", email, admin: false, balance_usd: 1, held_usd: 0, spendable_usd: 1 });
    expect((await b.call("GET", "/api/me")).status).toBe(200);
  });

  it("credits the starting balance as one registration_credit ledger entry", async () => {
    const { email } = await browser().register();
    expect(ledgerRows(gw, accountIdOf(email)).map((r) => [r.kind, r.amount_nano])).toEqual([["registration_credit", 1_000_000_000]]);
  });

  it("stores the password as an Argon2id hash", async () => {
    const { email, password } = await browser().register();
    const stored = sqlGet<{ password_hash: string }>(gw, "SELECT password_hash FROM accounts WHERE email = ?", email).password_hash;
    expect(stored).toStartWith("$argon2id$");
    expect(stored).not.toContain(password);
  });

  it("sets the session cookie HttpOnly, SameSite=Lax, Path=/ and not Secure over plain HTTP", async () => {
    const b = browser();
    await b.register();
    expect(b.setCookie).toMatch(/^gw_session=[A-Za-z0-9_-]{43}; Expires=.+; Max-Age=\d+; Path=\/; HttpOnly; SameSite=Lax$/);
  });

  it("refuses an email that already has an account with 400 invalid_request", async () => {
    const { email } = await browser().register();
    const res = (await browser().register(email)).res;
    expect(res.status).toBe(400);
    expect((await body(res)).error.code).toBe("invalid_request");
  });

  it("refuses a password under 8 characters, naming the field", async () => {
    const res = (await browser().register(freshEmail(), "short")).res;
    expect(res.status).toBe(400);
    expect((await body(res)).error.message).toBe("password: at least 8 characters");
  });

  it("refuses a body without an email, naming the field", async () => {
    const res = await browser().call("POST", "/api/register", { password: "correct horse" });
    expect(res.status).toBe(400);
    expect((await body(res)).error.message).toBe("email: Field required");
  });

  it("refuses what is not an email address", async () => {
    const res = (await browser().register("not-an-email")).res;
    expect(res.status).toBe(400);
  });
});

describe("POST /api/login", () => {
  it("logs in with the registered email and password and answers the account", async () => {
    const { email, password } = await browser().register();
    const b = browser();
    const res = await b.call("POST", "/api/login", { email: email.toUpperCase(), password });
    expect(res.status).toBe(200);
    expect((await body(res)).email).toBe(email);
    expect((await b.call("GET", "/api/me")).status).toBe(200);
  });

  it("logs in an account the operator made with --password-stdin (the same Argon2id hash)", async () => {
    const email = freshEmail();
    const hash = await Bun.password.hash("operator's pick");
    gw.services.db.$client.run("INSERT INTO accounts (email, password_hash, created_at) VALUES (?, ?, ?)", [email, hash, Date.now()]);
    expect((await browser().call("POST", "/api/login", { email, password: "operator's pick" })).status).toBe(200);
  });

  it("refuses an account the operator disabled with 403 inactive, after the right password", async () => {
    const { email, password } = await browser().register();
    gw.services.db.$client.run("UPDATE accounts SET disabled_at = 1 WHERE email = ?", [email]);
    const res = await browser().call("POST", "/api/login", { email, password });
    expect(res.status).toBe(403);
    expect((await body(res)).error.code).toBe("inactive");
  });
});

describe("sessions", () => {
  it("get a new id at login: the cookie the browser had before opens nothing after", async () => {
    const b = browser();
    const { email, password } = await b.register();
    const before = b.cookie!;
    await b.call("POST", "/api/login", { email, password });
    expect(b.cookie).not.toBe(before);
    const old = new Browser(gw.url);
    old.cookie = before;
    expect((await old.call("GET", "/api/me")).status).toBe(401);
  });

  it("end at logout: the cookie is cleared and its token opens nothing", async () => {
    const b = browser();
    await b.register();
    const token = b.cookie!;
    const res = await b.call("POST", "/api/logout");
    expect(res.status).toBe(200);
    expect(b.setCookie).toStartWith("gw_session=; Max-Age=0; Path=/; HttpOnly");
    b.cookie = token;
    expect((await b.call("GET", "/api/me")).status).toBe(401);
  });

  it("end everywhere at logout-all", async () => {
    const first = browser();
    const { email, password } = await first.register();
    const second = browser();
    await second.call("POST", "/api/login", { email, password });
    const res = await second.call("POST", "/api/logout-all");
    expect(await body(res)).toEqual({ logged_out: true, sessions_ended: 2 });
    expect((await first.call("GET", "/api/me")).status).toBe(401);
    second.cookie = null;
    expect((await second.call("GET", "/api/me")).status).toBe(401);
  });

  it("end at their expiry with 401 no-session", async () => {
    const b = browser();
    const { email } = await b.register();
    gw.services.db.$client.run("UPDATE sessions SET expires_at = ? WHERE account_id = ?", [Date.now() - 1, accountIdOf(email)]);
    const res = await b.call("GET", "/api/me");
    expect(res.status).toBe(401);
    expect((await body(res)).error.code).toBe("no-session");
  });

  it("of an account the operator disabled are refused with 403 inactive", async () => {
    const b = browser();
    const { email } = await b.register();
    gw.services.db.$client.run("UPDATE accounts SET disabled_at = 1 WHERE email = ?", [email]);
    const res = await b.call("GET", "/api/me");
    expect(res.status).toBe(403);
    expect((await body(res)).error.code).toBe("inactive");
  });
});

describe("POST /api/password", () => {
  it("changes the password: the new one logs in, the old one no longer does", async () => {
    const b = browser();
    const { email, password } = await b.register();
    const res = await b.call("POST", "/api/password", { current_password: password, new_password: "battery staple" });
    expect(res.status).toBe(200);
    expect((await browser().call("POST", "/api/login", { email, password })).status).toBe(401);
    expect((await browser().call("POST", "/api/login", { email, password: "battery staple" })).status).toBe(200);
  });

  it("ends the account's other sessions and keeps this one", async () => {
    const b = browser();
    const { email, password } = await b.register();
    const other = browser();
    await other.call("POST", "/api/login", { email, password });
    const res = await b.call("POST", "/api/password", { current_password: password, new_password: "battery staple" });
    expect((await body(res)).sessions_ended).toBe(1);
    expect((await other.call("GET", "/api/me")).status).toBe(401);
    expect((await b.call("GET", "/api/me")).status).toBe(200);
  });

  it("refuses a wrong current password with 401 invalid_credentials and changes nothing", async () => {
    const b = browser();
    const { email, password } = await b.register();
    const res = await b.call("POST", "/api/password", { current_password: "not it at all", new_password: "battery staple" });
    expect(res.status).toBe(401);
    expect((await body(res)).error.code).toBe("invalid_credentials");
    expect((await browser().call("POST", "/api/login", { email, password })).status).toBe(200);
  });

  it("refuses a new password under 8 characters, naming new_password", async () => {
    const b = browser();
    const { password } = await b.register();
    const res = await b.call("POST", "/api/password", { current_password: password, new_password: "short" });
    expect(res.status).toBe(400);
    expect((await body(res)).error.message).toBe("new_password: at least 8 characters");
  });
});

describe("GET /api/me and the low-balance threshold", () => {
  it("shows the balance, what running requests hold and what is spendable", async () => {
    const b = browser();
    const { email } = await b.register();
    gw.services.ledger.credit(accountIdOf(email), 500_000_000, "operator_credit");
    expect(await body(await b.call("GET", "/api/me"))).toMatchObject({ balance_usd: 1.5, held_usd: 0, spendable_usd: 1.5 });
  });

  it("has no threshold until one is set", async () => {
    const b = browser();
    await b.register();
    expect((await body(await b.call("GET", "/api/me"))).low_balance).toEqual({ threshold_usd: null, below: false });
  });

  it("says below once spendable falls under the threshold set with PUT /api/me/low-balance", async () => {
    const b = browser();
    await b.register();
    const res = await b.call("PUT", "/api/me/low-balance", { threshold_usd: 2.5 });
    expect(res.status).toBe(200);
    expect((await body(res)).low_balance).toEqual({ threshold_usd: 2.5, below: true });
    expect((await body(await b.call("PUT", "/api/me/low-balance", { threshold_usd: "0.5" }))).low_balance).toEqual({ threshold_usd: 0.5, below: false });
  });

  it("removes the threshold with null", async () => {
    const b = browser();
    await b.register();
    await b.call("PUT", "/api/me/low-balance", { threshold_usd: 2 });
    expect((await body(await b.call("PUT", "/api/me/low-balance", { threshold_usd: null }))).low_balance.threshold_usd).toBeNull();
  });

  it("refuses a threshold that is not a USD amount", async () => {
    const b = browser();
    await b.register();
    const res = await b.call("PUT", "/api/me/low-balance", { threshold_usd: -1 });
    expect(res.status).toBe(400);
    expect((await body(res)).error.message).toStartWith("threshold_usd: not a USD amount");
  });

  it("refuses a request without a session with 401 no-session", async () => {
    const res = await browser().call("GET", "/api/me");
    expect(res.status).toBe(401);
    expect((await body(res)).error.code).toBe("no-session");
  });
});

describe("[dashboard] settings", () => {
  it("registration = closed refuses POST /api/register with 403 registration_closed", async () => {
    const closed = await dashboardGateway({ dashboard: { registration: "closed" } });
    try {
      const res = await new Browser(closed.url).register();
      expect(res.res.status).toBe(403);
      expect((await body(res.res)).error.code).toBe("registration_closed");
      expect(closed.services.db.$client.query("SELECT count(*) AS n FROM accounts").get()).toEqual({ n: 0 });
    } finally {
      await closed.stop();
    }
  });

  it("starting_credit_usd is the credit of a new registration", async () => {
    const other = await dashboardGateway({ dashboard: { starting_credit_usd: 2.5 } });
    try {
      expect((await body((await new Browser(other.url).register()).res)).balance_usd).toBe(2.5);
    } finally {
      await other.stop();
    }
  });

  it("starting_credit_usd = 0 opens the account with no ledger entry", async () => {
    const other = await dashboardGateway({ dashboard: { starting_credit_usd: 0 } });
    try {
      expect((await body((await new Browser(other.url).register()).res)).balance_usd).toBe(0);
      expect(other.services.db.$client.query("SELECT count(*) AS n FROM ledger_entries").get()).toEqual({ n: 0 });
    } finally {
      await other.stop();
    }
  });
});
