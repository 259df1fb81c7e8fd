import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { expectOneLineFailure, gateway, gatewayJson } from "../support/cli.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { hi, postJson } from "../support/http.ts";
import { expectError } from "../support/errors.ts";
import { Browser } from "../api/support.ts";
import { enrolled, loginFirstStep } from "../support/two-factor.ts";

// gateway account list / show / debit / disable / enable, against the database of a running
// server, whose answers show each command took effect.

// Each test runs the CLI as a process, some several times, and a password is hashed with Argon2id:
// seconds on a loaded machine.
setDefaultTimeout(30_000);

let gw: TestGateway;
let db: string;
beforeAll(async () => {
  gw = await startTestGateway();
  db = gw.config.database;
});
afterAll(() => gw.stop());

let seq = 0;
const email = () => `acc${process.pid}-${++seq}@cli.test`;
const run = <T = Record<string, any>>(...args: string[]) => gatewayJson<T>([...args, "--db", db]);
const chat = (key: string) => postJson(gw, "/v1/chat/completions", key, { model: "demo", max_tokens: 8, messages: hi });

describe("account list", () => {
  it("shows every account with its balance, status, keys and creation time", async () => {
    const e = email();
    await run("account", "create", "--email", e, "--balance", "2.5");
    await run("key", "create", "--email", e);
    const revoked = await run<{ id: number }>("key", "create", "--email", e);
    await run("key", "revoke", String(revoked.id));
    const rows = await run<Record<string, unknown>[]>("account", "list");
    const row = rows.find((r) => r.email === e);
    expect(row).toMatchObject({ balance_usd: 2.5, status: "active", keys: 2, active_keys: 1 });
    expect(Date.parse(row!.created_at as string)).toBeGreaterThan(Date.now() - 60_000);
  });

  it("prints a table for people, one account a line", async () => {
    const e = email();
    await run("account", "create", "--email", e, "--balance", "3");
    const r = await gateway(["account", "list", "--db", db]);
    expect(r.stdout.split("\n")[0]).toMatch(/^id\s+email\s+balance USD\s+status\s+keys/);
    expect(r.stdout.split("\n").find((l) => l.includes(e))).toMatch(/\s3\s+active\s/);
  });
});

describe("account show", () => {
  it("shows the account, its keys by prefix and its latest ledger rows", async () => {
    const e = email();
    await run("account", "create", "--email", e);
    const k = await run<{ prefix: string; key: string }>("key", "create", "--email", e, "--name", "laptop");
    await run("account", "credit", "--email", e, "--usd", "4", "--note", "invoice 12");
    const shown = await run("account", "show", "--email", e);
    expect(shown).toMatchObject({ email: e, balance_usd: 5, status: "active", keys: [{ prefix: k.prefix, name: "laptop" }] });
    expect(shown.recent_ledger[0]).toMatchObject({ kind: "operator_credit", amount_usd: 4, note: "invoice 12" });
    expect(JSON.stringify(shown)).not.toContain(k.key);
  });

  it("refuses an unknown email in one line", async () => {
    expect(expectOneLineFailure(await gateway(["account", "show", "--email", "nobody@cli.test", "--db", db]))).toContain("no account");
  });
});

describe("account debit", () => {
  it("takes money back with a correcting ledger row of its own kind and its note; the books still balance", async () => {
    const e = email();
    const acc = await run<{ id: number }>("account", "create", "--email", e, "--balance", "3");
    expect(await run("account", "debit", "--email", e, "--usd", "1.25", "--note", "refund reversed")).toMatchObject({ debited_usd: 1.25, balance_usd: 1.75 });
    const money = gw.money(acc.id);
    expect(money.balance).toBe(1.75e9);
    expect(money.ledgerSum).toBe(money.balance);
    const row = gw.services.db.$client.query("SELECT kind, amount_nano, note FROM ledger_entries WHERE account_id = ? ORDER BY id DESC LIMIT 1").get(acc.id);
    expect(row).toEqual({ kind: "operator_debit", amount_nano: -1.25e9, note: "refund reversed" });
  });

  it("applies to the running server's next request", async () => {
    const e = email();
    await run("account", "create", "--email", e, "--balance", "1");
    const k = await run<{ key: string }>("key", "create", "--email", e);
    expect((await chat(k.key)).status).toBe(200);
    const left = (await run("account", "show", "--email", e)).balance_usd as number;
    await run("account", "debit", "--email", e, "--usd", String(left), "--note", "empty it");
    await expectError(await chat(k.key), 402, "insufficient_balance");
  });

  it("never takes the balance below zero: refused with the balance in the reason, nothing written", async () => {
    const e = email();
    const acc = await run<{ id: number }>("account", "create", "--email", e, "--balance", "1");
    const line = expectOneLineFailure(await gateway(["account", "debit", "--email", e, "--usd", "1.000000001", "--note", "x", "--db", db]));
    expect(line).toBe("gateway: a debit of 1.000000001 USD would take the balance of 1 USD below zero");
    expect(gw.money(acc.id)).toMatchObject({ balance: 1e9, ledgerSum: 1e9 });
  });

  it("requires a note", async () => {
    const e = email();
    await run("account", "create", "--email", e);
    expect(expectOneLineFailure(await gateway(["account", "debit", "--email", e, "--usd", "0.5", "--db", db]))).toBe("gateway: --note is required");
  });

  it("refuses zero and negative amounts", async () => {
    const e = email();
    await run("account", "create", "--email", e);
    expect(expectOneLineFailure(await gateway(["account", "debit", "--email", e, "--usd", "0", "--note", "x", "--db", db]))).toContain("more than 0");
    expect(expectOneLineFailure(await gateway(["account", "debit", "--email", e, "--usd", "-2", "--note", "x", "--db", db]))).toContain("negative");
  });
});

describe("account credit and debit with --idempotency-key", () => {
  // A script that retries after a timeout: before, each run moved the money again (two runs of a
  // 2 USD credit credited 4 USD and wrote two entries).
  const operatorEntries = (accountId: number) =>
    gw.services.db.$client.query("SELECT kind, amount_nano FROM ledger_entries WHERE account_id = ? AND kind LIKE 'operator_%' ORDER BY id").all(accountId);
  for (const [op, sign] of [["credit", 1], ["debit", -1]] as const) {
    it(`moves a ${op} run twice with one key once, and prints the first run's result again`, async () => {
      const e = email();
      const acc = await run<{ id: number }>("account", "create", "--email", e, "--balance", "5");
      const args = ["account", op, "--email", e, "--usd", "2", "--note", "retried", "--idempotency-key", "job-7"];
      const first = await run(...args);
      const second = await run(...args);
      expect(second).toEqual({ ...first, replayed: true });
      expect(gw.money(acc.id)).toMatchObject({ balance: 5e9 + sign * 2e9, ledgerSum: 5e9 + sign * 2e9 });
      expect(operatorEntries(acc.id)).toEqual([{ kind: `operator_${op}`, amount_nano: sign * 2e9 }]);
      expect((await gateway([...args, "--db", db])).stdout).toStartWith(`already ${op}ed with this --idempotency-key, nothing moved now: `);
    });

    it(`refuses a ${op} that reuses a key with another amount in one line, nothing moved`, async () => {
      const e = email();
      const acc = await run<{ id: number }>("account", "create", "--email", e, "--balance", "5");
      await run("account", op, "--email", e, "--usd", "2", "--note", "retried", "--idempotency-key", "job-8");
      const line = expectOneLineFailure(await gateway(["account", op, "--email", e, "--usd", "3", "--note", "retried", "--idempotency-key", "job-8", "--db", db]));
      expect(line).toBe(`gateway: --idempotency-key 'job-8' was used within 24 h for this account with another amount or note (idempotency_conflict): nothing moved; give a new key for a new move`);
      expect(operatorEntries(acc.id)).toEqual([{ kind: `operator_${op}`, amount_nano: sign * 2e9 }]);
    });
  }

  it("frees the key of a refused debit, so the corrected run moves the money", async () => {
    const e = email();
    const acc = await run<{ id: number }>("account", "create", "--email", e, "--balance", "1");
    expectOneLineFailure(await gateway(["account", "debit", "--email", e, "--usd", "5", "--note", "x", "--idempotency-key", "job-9", "--db", db]));
    expect(await run("account", "debit", "--email", e, "--usd", "0.5", "--note", "x", "--idempotency-key", "job-9")).toMatchObject({ debited_usd: 0.5, balance_usd: 0.5 });
    expect(gw.money(acc.id).balance).toBe(0.5e9);
  });
});

describe("account credit", () => {
  it("refuses a credit past the balance's ceiling of 9007199.254740991 USD in one line, nothing written", async () => {
    const e = email();
    const acc = await run<{ id: number }>("account", "create", "--email", e, "--balance", "9007199.254740991");
    const line = expectOneLineFailure(await gateway(["account", "credit", "--email", e, "--usd", "0.000000001", "--db", db]));
    expect(line).toBe("gateway: A credit of 0.000000001 USD would take the balance of 9007199.254740991 USD past 9007199.254740991 USD, the most one account can hold; nothing was credited.");
    expect(gw.money(acc.id)).toMatchObject({ balance: Number.MAX_SAFE_INTEGER, ledgerSum: Number.MAX_SAFE_INTEGER });
  });

  it("refuses 1e3, an amount in exponent form, in one line, nothing written", async () => {
    const e = email();
    const acc = await run<{ id: number }>("account", "create", "--email", e, "--balance", "1");
    expect(expectOneLineFailure(await gateway(["account", "credit", "--email", e, "--usd", "1e3", "--db", db]))).toContain("--usd");
    expect(gw.money(acc.id)).toMatchObject({ balance: 1e9, ledgerSum: 1e9 });
  });
});

describe("account disable and enable", () => {
  it("disable makes the running server refuse the account's keys with 403 inactive, saying the account is disabled", async () => {
    const e = email();
    await run("account", "create", "--email", e);
    const k = await run<{ key: string }>("key", "create", "--email", e);
    // Used first, so the server holds the key in memory when the CLI disables the account.
    expect((await chat(k.key)).status).toBe(200);
    expect(await run("account", "disable", "--email", e)).toMatchObject({ status: "disabled", changed: true });
    const err = await expectError(await chat(k.key), 403, "inactive", "permission_error");
    expect(err.message).toContain("account");
    expect(err.message).toContain("disabled");
    expect((await run("account", "show", "--email", e)).status).toBe("disabled");
  });

  it("enable lets the same keys through again", async () => {
    const e = email();
    await run("account", "create", "--email", e);
    const k = await run<{ key: string }>("key", "create", "--email", e);
    await run("account", "disable", "--email", e);
    await expectError(await chat(k.key), 403, "inactive", "permission_error");
    expect(await run("account", "enable", "--email", e)).toMatchObject({ status: "active", changed: true });
    expect((await chat(k.key)).status).toBe(200);
  });

  it("enable leaves the dashboard sessions opened before the disable ended", async () => {
    const b = new Browser(gw.url);
    const { email: e } = await b.register();
    await run("account", "disable", "--email", e);
    await run("account", "enable", "--email", e);
    await expectError(await b.call("GET", "/api/me"), 401, "no-session", "authentication_error");
  });

  it("says so when the account already was in that state", async () => {
    const e = email();
    await run("account", "create", "--email", e);
    expect(await run("account", "enable", "--email", e)).toMatchObject({ status: "active", changed: false });
  });
});

describe("account create --admin and account update", () => {
  const isAdmin = (e: string) => (gw.services.db.$client.query("SELECT admin FROM accounts WHERE email = ?").get(e) as { admin: number }).admin === 1;
  const audit = (e: string) =>
    gw.services.db.$client
      .query("SELECT actor_account_id AS actor, action FROM audit_log WHERE target_account_id = (SELECT id FROM accounts WHERE email = ?) ORDER BY id")
      .all(e);

  it("create --admin makes an admin account, in the audit log as the operator's action", async () => {
    const e = email();
    expect(await run("account", "create", "--email", e, "--admin")).toMatchObject({ email: e, admin: true });
    expect(isAdmin(e)).toBe(true);
    expect(audit(e)).toEqual([{ actor: null, action: "admin_granted" }]);
  });

  it("create without --admin makes an account that is not admin", async () => {
    const e = email();
    expect(await run("account", "create", "--email", e)).toMatchObject({ admin: false });
    expect(isAdmin(e)).toBe(false);
  });

  it("account show and account list say which accounts are admin", async () => {
    const [admin, plain] = [email(), email()];
    await run("account", "create", "--email", admin, "--admin");
    await run("account", "create", "--email", plain);
    expect(await run("account", "show", "--email", admin)).toMatchObject({ email: admin, admin: true });
    expect(await run("account", "show", "--email", plain)).toMatchObject({ email: plain, admin: false });
    const list = await run<{ email: string; admin: boolean }[]>("account", "list");
    expect(list.filter((a) => a.email === admin || a.email === plain).map((a) => [a.email, a.admin])).toEqual([[admin, true], [plain, false]]);
  });

  it("update --admin and --no-admin grant and take away admin, each in the audit log", async () => {
    const e = email();
    await run("account", "create", "--email", e);
    expect(await run("account", "update", "--email", e, "--admin")).toMatchObject({ admin: true, changed: true });
    expect(isAdmin(e)).toBe(true);
    expect(await run("account", "update", "--email", e, "--no-admin")).toMatchObject({ admin: false, changed: true });
    expect(isAdmin(e)).toBe(false);
    expect(audit(e)).toEqual([
      { actor: null, action: "admin_granted" },
      { actor: null, action: "admin_revoked" },
    ]);
  });

  it("update says so when nothing changes, and writes no audit row", async () => {
    const e = email();
    await run("account", "create", "--email", e);
    expect(await run("account", "update", "--email", e, "--no-admin")).toMatchObject({ admin: false, changed: false });
    expect(audit(e)).toEqual([]);
  });

  it("update refuses neither or both of --admin and --no-admin", async () => {
    const e = email();
    await run("account", "create", "--email", e);
    expect(expectOneLineFailure(await gateway(["account", "update", "--email", e, "--db", db]))).toContain("--admin or --no-admin");
    expect(expectOneLineFailure(await gateway(["account", "update", "--email", e, "--admin", "--no-admin", "--db", db]))).toContain("--admin or --no-admin");
  });

  it("refuses --admin on a subcommand that does not take it", async () => {
    const e = email();
    await run("account", "create", "--email", e);
    expect(expectOneLineFailure(await gateway(["account", "credit", "--email", e, "--usd", "1", "--admin", "--db", db]))).toContain("takes no --admin");
  });
});

describe("account update --password-stdin", () => {
  const login = (e: string, password: string) => new Browser(gw.url).call("POST", "/api/login", { email: e, password });
  const setPassword = (e: string, password: string) => gateway(["account", "update", "--email", e, "--password-stdin", "--json", "--db", db], { stdin: `${password}\n` });

  it("gives an account created without a password its dashboard login, in the audit log as the operator's", async () => {
    const e = email();
    await run("account", "create", "--email", e);
    expect((await login(e, "first of its kind")).status).toBe(401);
    const r = await setPassword(e, "first of its kind");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ email: e, password_set: true, sessions_ended: 0 });
    expect((await login(e, "first of its kind")).status).toBe(200);
    expect(gw.services.db.$client.query("SELECT actor_account_id AS actor, action FROM audit_log WHERE target_account_id = (SELECT id FROM accounts WHERE email = ?)").all(e)).toEqual([
      { actor: null, action: "password_set" },
    ]);
  });

  it("replaces the password and ends the account's open sessions", async () => {
    const e = email();
    await run("account", "create", "--email", e);
    await setPassword(e, "the old password");
    const b = new Browser(gw.url);
    expect((await b.call("POST", "/api/login", { email: e, password: "the old password" })).status).toBe(200);
    expect(JSON.parse((await setPassword(e, "the new password")).stdout).sessions_ended).toBe(1);
    expect((await b.call("GET", "/api/me")).status).toBe(401);
    expect((await login(e, "the old password")).status).toBe(401);
    expect((await login(e, "the new password")).status).toBe(200);
  });

  it("voids the account's pending password reset link", async () => {
    const e = email();
    await run("account", "create", "--email", e);
    const id = (await gw.services.accounts.find(e))!.id;
    const now = Date.now();
    await gw.services.links.issue(id, "password_reset", { tokenHash: "sha-of-a-reset-link", expiresAt: now + 3_600_000 }, now, now);
    expect((await setPassword(e, "set by the operator")).code).toBe(0);
    expect(await gw.services.links.peek("sha-of-a-reset-link", "password_reset", Date.now())).toBeNull();
  });

  it("refuses a password under 8 characters in one line, setting nothing", async () => {
    const e = email();
    await run("account", "create", "--email", e);
    const r = await gateway(["account", "update", "--email", e, "--password-stdin", "--db", db], { stdin: "short\n" });
    expect(expectOneLineFailure(r)).toContain("at least 8 characters");
    expect((await login(e, "short")).status).toBe(401);
  });

  it("refuses a password over 1,024 characters, as the dashboard does, setting nothing", async () => {
    const e = email();
    await run("account", "create", "--email", e);
    const long = "x".repeat(1_025);
    const r = await gateway(["account", "update", "--email", e, "--password-stdin", "--db", db], { stdin: `${long}\n` });
    expect(expectOneLineFailure(r)).toBe("gateway: the password from stdin: at most 1024 characters");
    expect((await login(e, long)).status).toBe(401);
    expect((await setPassword(e, "y".repeat(1_024))).code).toBe(0);
  });

  it("refuses a password holding U+0000, as the dashboard does, setting nothing", async () => {
    const e = email();
    await run("account", "create", "--email", e);
    const r = await gateway(["account", "update", "--email", e, "--password-stdin", "--db", db], { stdin: "long enough\u0000\n" });
    expect(expectOneLineFailure(r)).toBe("gateway: the password from stdin: U+0000 (the NUL character) is not allowed in text.");
    expect(gw.services.db.$client.query("SELECT password_hash FROM accounts WHERE email = ?").get(e)).toEqual({ password_hash: null });
  });
});

describe("account create --password-stdin", () => {
  it("refuses a password over 1,024 characters, as the dashboard does, creating no account", async () => {
    const e = email();
    const r = await gateway(["account", "create", "--email", e, "--password-stdin", "--db", db], { stdin: `${"x".repeat(1_025)}\n` });
    expect(expectOneLineFailure(r)).toBe("gateway: the password from stdin: at most 1024 characters");
    expect(gw.services.db.$client.query("SELECT count(*) AS n FROM accounts WHERE email = ?").get(e)).toEqual({ n: 0 });
  });
});

describe("account update --reset-2fa", () => {
  const auditOf = (id: number) => gw.services.db.$client.query("SELECT actor_account_id AS actor, action FROM audit_log WHERE target_account_id = ? ORDER BY id").all(id);

  it("removes the account's two-factor login: the next login asks for the password only, in the audit log as the operator's", async () => {
    const h = await enrolled(gw);
    expect((await loginFirstStep(gw, h)).token).toBeString();
    expect(await run("account", "update", "--email", h.email, "--reset-2fa")).toEqual({ id: h.id, email: h.email, two_factor_reset: true });
    const b = new Browser(gw.url);
    expect(await (await b.call("POST", "/api/login", { email: h.email, password: h.password })).json()).toMatchObject({ object: "account", two_factor: false });
    expect(auditOf(h.id)).toEqual([
      { actor: h.id, action: "two_factor_enabled" },
      { actor: null, action: "two_factor_reset" },
    ]);
  });

  it("list and show say which accounts have two-factor login on", async () => {
    const h = await enrolled(gw);
    expect((await run<Record<string, unknown>[]>("account", "list")).find((r) => r.email === h.email)).toMatchObject({ two_factor: true });
    expect(await run("account", "show", "--email", h.email)).toMatchObject({ two_factor: true });
    const human = await gateway(["account", "show", "--email", h.email, "--db", db]);
    expect(human.stdout.split("\n")[0]).toContain("two-factor login on");
  });

  it("says so on an account without it, and writes no audit row", async () => {
    const e = email();
    const made = await run<{ id: number }>("account", "create", "--email", e);
    expect(await run("account", "update", "--email", e, "--reset-2fa")).toMatchObject({ two_factor_reset: false });
    expect(auditOf(made.id)).toEqual([]);
  });
});
