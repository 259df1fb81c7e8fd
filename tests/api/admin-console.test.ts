import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import type { TestGateway } from "../support/gateway.ts";
import { postWithApiKey, sqlAll, sqlGet } from "../support/keyed.ts";
import { adminOn, body, Browser, dashboardGateway, freshEmail, holderOn, refusedWith } from "./support.ts";

// Logins and registrations hash a password with Argon2id: seconds each on a loaded machine.
setDefaultTimeout(30_000);

// docs/dashboard.md#admin: the console's routes beside the credit and debit of tests/api/admin.test.ts:
// totals, the account search, an account's page and note, an account and a key made for someone.

let gw: TestGateway;
beforeAll(async () => {
  gw = await dashboardGateway();
});
afterAll(() => gw.stop());

const holder = () => holderOn(gw);
const admin = () => adminOn(gw);
const chat = (key: string, model = "demo") => postWithApiKey(gw, "/v1/chat/completions", { model, max_tokens: 8, messages: [{ role: "user", content: "hi" }] }, key);
const balanceOf = (id: number) => sqlGet<{ balance_nano: number }>(gw, "SELECT balance_nano FROM accounts WHERE id = ?", id).balance_nano;
const auditOf = (id: number) => sqlAll<{ actor_account_id: number; action: string; detail: string | null }>(gw, "SELECT actor_account_id, action, detail FROM audit_log WHERE target_account_id = ? ORDER BY id", id);

describe("the new admin routes for a session that is not admin", () => {
  const routes: [string, string, unknown?][] = [
    ["GET", "/api/admin/totals"],
    ["POST", "/api/admin/accounts", { email: "x@test.local" }],
    ["GET", "/api/admin/accounts/1"],
    ["PUT", "/api/admin/accounts/1/note", { note: "x" }],
    ["PUT", "/api/admin/accounts/1/password", { password: "correct horse" }],
    ["POST", "/api/admin/accounts/1/keys", {}],
    ["DELETE", "/api/admin/accounts/1/keys/1"],
  ];
  for (const [method, path, payload] of routes) {
    it(`refuses ${method} ${path} with 403 admin, and writes nothing`, async () => {
      const h = await holder();
      const before = sqlGet<{ n: number }>(gw, "SELECT (SELECT count(*) FROM accounts) + (SELECT count(*) FROM api_keys) + (SELECT count(*) FROM audit_log) AS n").n;
      await refusedWith(await h.b.call(method, path, payload), 403, "admin");
      expect(sqlGet<{ n: number }>(gw, "SELECT (SELECT count(*) FROM accounts) + (SELECT count(*) FROM api_keys) + (SELECT count(*) FROM audit_log) AS n").n).toBe(before);
    });
  }
});

describe("routes naming an account that does not exist", () => {
  const routes: [string, string, unknown?][] = [
    ["GET", "/api/admin/accounts/999999"],
    ["PUT", "/api/admin/accounts/999999/note", { note: "x" }],
    ["PUT", "/api/admin/accounts/999999/password", { password: "correct horse" }],
    ["POST", "/api/admin/accounts/999999/keys", {}],
    ["DELETE", "/api/admin/accounts/999999/keys/1"],
    ["GET", "/api/admin/accounts/nope"],
  ];
  for (const [method, path, payload] of routes) {
    it(`answer ${method} ${path} with 404 account_not_found`, async () => {
      const a = await admin();
      await refusedWith(await a.b.call(method, path, payload), 404, "account_not_found");
    });
  }
});

describe("GET /api/admin/totals", () => {
  it("sums today's and this month's requests, failures, error rate and spend from the request log, by model and by provider", async () => {
    const a = await admin();
    const h = await holder();
    const k = await body(await h.b.call("POST", "/api/keys", {}));
    expect((await chat(k.key)).status).toBe(200);
    expect((await chat(k.key, "no-such-model")).status).toBe(404);
    const t = await body(await a.b.call("GET", "/api/admin/totals"));
    const now = new Date();
    const month = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
    const day = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
    const logged = (since: number) =>
      sqlGet<{ n: number; failed: number; cost: number }>(gw, "SELECT count(*) AS n, sum(status >= 400) AS failed, sum(cost_nano) AS cost FROM request_logs WHERE created_at >= ?", since);
    for (const [cell, since] of [[t.today, day], [t.month, month]] as const) {
      const l = logged(since);
      expect(cell).toEqual({ requests: l.n, failed: l.failed, error_rate: l.failed / l.n, spend_usd: l.cost / 1e9 });
    }
    expect(t.today.failed).toBeGreaterThanOrEqual(1);
    expect(t.today.spend_usd).toBeGreaterThan(0);
    const demo = sqlGet<{ cost: number; n: number }>(gw, "SELECT sum(cost_nano) AS cost, count(*) AS n FROM request_logs WHERE model = 'demo-text-1' AND created_at >= ?", month);
    expect(t.by_model.find((m: { model: string }) => m.model === "demo-text-1").month).toMatchObject({ requests: demo.n, spend_usd: demo.cost / 1e9 });
    const providers = sqlAll<{ provider: string | null; cost: number }>(gw, "SELECT provider, sum(cost_nano) AS cost FROM request_logs WHERE created_at >= ? GROUP BY provider", month);
    expect(t.by_provider.map((p: { provider: string | null; month: { spend_usd: number } }) => [p.provider, p.month.spend_usd]).sort()).toEqual(providers.map((p) => [p.provider, p.cost / 1e9]).sort());
    expect(t.month_start).toBe(new Date(month).toISOString());
  });
});

describe("GET /api/admin/accounts?q=", () => {
  it("finds accounts by part of the email, a page at a time, with how many match", async () => {
    const a = await admin();
    const tag = `find${process.pid}x${Date.now()}`;
    const made: number[] = [];
    for (let i = 0; i < 3; i++) made.push((await body(await a.b.call("POST", "/api/admin/accounts", { email: `${tag}-${i}@test.local` }))).id);
    const first = await body(await a.b.call("GET", `/api/admin/accounts?q=${tag.toUpperCase()}&limit=2`));
    expect(first).toMatchObject({ total: 3, offset: 0 });
    expect(first.data.map((r: { id: number }) => r.id)).toEqual(made.slice(0, 2));
    const second = await body(await a.b.call("GET", `/api/admin/accounts?q=${tag}&limit=2&offset=2`));
    expect(second.data.map((r: { id: number }) => r.id)).toEqual(made.slice(2));
  });

  it("finds an account by its id", async () => {
    const a = await admin();
    const h = await holder();
    const found = await body(await a.b.call("GET", `/api/admin/accounts?q=${h.id}`));
    expect(found.data.map((r: { id: number }) => r.id)).toContain(h.id);
  });

  it("refuses a bad offset, a bad limit and an unknown parameter with 400, naming it", async () => {
    const a = await admin();
    expect(await refusedWith(await a.b.call("GET", "/api/admin/accounts?offset=-1"), 400, "invalid_request")).toStartWith("offset: ");
    expect(await refusedWith(await a.b.call("GET", "/api/admin/accounts?limit=0"), 400, "invalid_request")).toStartWith("limit: ");
    expect(await refusedWith(await a.b.call("GET", "/api/admin/accounts?email=x"), 400, "invalid_request")).toStartWith("email: ");
  });
});

describe("GET /api/admin/accounts/{id}", () => {
  it("shows the account's money, keys, newest requests and ledger, never a whole key", async () => {
    const a = await admin();
    const h = await holder();
    const k = await body(await h.b.call("POST", "/api/keys", { name: "laptop" }));
    expect((await chat(k.key)).status).toBe(200);
    const page = await body(await a.b.call("GET", `/api/admin/accounts/${h.id}`));
    expect(page.account).toMatchObject({ id: h.id, email: h.email, balance_usd: balanceOf(h.id) / 1e9, keys: 1 });
    expect(page.keys).toEqual([expect.objectContaining({ id: k.id, name: "laptop", prefix: k.prefix, status: "active" })]);
    expect(page.requests).toEqual([expect.objectContaining({ key_id: k.id, model: "demo-text-1", status: 200 })]);
    expect(page.ledger.map((e: { kind: string }) => e.kind).sort()).toEqual(["charges", "registration_credit"]);
    expect(page.note).toEqual({ note: null, updated_at: null, updated_by: null });
    expect(JSON.stringify(page)).not.toContain(k.key);
  });
});

describe("PUT /api/admin/accounts/{id}/note", () => {
  it("keeps the operator's note, shown on the account's page, with an audit row; an empty note removes it", async () => {
    const a = await admin();
    const h = await holder();
    const set = await body(await a.b.call("PUT", `/api/admin/accounts/${h.id}/note`, { note: "  pays by invoice  " }));
    expect(set).toMatchObject({ note: "pays by invoice", updated_by: a.email });
    expect((await body(await a.b.call("GET", `/api/admin/accounts/${h.id}`))).note.note).toBe("pays by invoice");
    expect(await body(await a.b.call("PUT", `/api/admin/accounts/${h.id}/note`, { note: "" }))).toEqual({ note: null, updated_at: null, updated_by: null });
    expect(auditOf(h.id)).toEqual([
      { actor_account_id: a.id, action: "account_note_set", detail: "pays by invoice" },
      { actor_account_id: a.id, action: "account_note_removed", detail: null },
    ]);
  });

  it("refuses a note over 2000 characters or a body without one with 400, writing nothing", async () => {
    const a = await admin();
    const h = await holder();
    await refusedWith(await a.b.call("PUT", `/api/admin/accounts/${h.id}/note`, { note: "x".repeat(2001) }), 400, "invalid_request");
    await refusedWith(await a.b.call("PUT", `/api/admin/accounts/${h.id}/note`, {}), 400, "invalid_request");
    expect(auditOf(h.id)).toEqual([]);
  });
});

describe("POST /api/admin/accounts", () => {
  it("creates an account with the opening balance given, as an operator_credit, audited; its password logs in", async () => {
    const a = await admin();
    const email = freshEmail();
    const res = await a.b.call("POST", "/api/admin/accounts", { email, password: "correct horse", balance_usd: "2.5" });
    expect(res.status).toBe(201);
    const made = await body(res);
    expect(made).toMatchObject({ email, balance_usd: 2.5, admin: false, disabled: false });
    expect(balanceOf(made.id)).toBe(2_500_000_000);
    expect(sqlAll(gw, "SELECT kind, amount_nano FROM ledger_entries WHERE account_id = ?", made.id)).toEqual([{ kind: "operator_credit", amount_nano: 2_500_000_000 }]);
    expect(auditOf(made.id)).toEqual([{ actor_account_id: a.id, action: "account_created", detail: `${email}, opening balance 2.5 USD` }]);
    expect((await new Browser(gw.url).call("POST", "/api/login", { email, password: "correct horse" })).status).toBe(200);
  });

  it("creates an account at 0 without a balance, and with no password", async () => {
    const a = await admin();
    const made = await body(await a.b.call("POST", "/api/admin/accounts", { email: freshEmail() }));
    expect(made.balance_usd).toBe(0);
    expect(balanceOf(made.id)).toBe(0);
  });

  it("refuses a taken email, a bad address, a negative balance and a short password with 400, creating nothing", async () => {
    const a = await admin();
    const before = sqlGet<{ n: number }>(gw, "SELECT count(*) AS n FROM accounts").n;
    await refusedWith(await a.b.call("POST", "/api/admin/accounts", { email: a.email }), 400, "invalid_request");
    await refusedWith(await a.b.call("POST", "/api/admin/accounts", { email: "not an address" }), 400, "invalid_request");
    expect(await refusedWith(await a.b.call("POST", "/api/admin/accounts", { email: freshEmail(), balance_usd: -1 }), 400, "invalid_request")).toStartWith("balance_usd: ");
    await refusedWith(await a.b.call("POST", "/api/admin/accounts", { email: freshEmail(), password: "short" }), 400, "invalid_request");
    expect(sqlGet<{ n: number }>(gw, "SELECT count(*) AS n FROM accounts").n).toBe(before);
  });
});

describe("PUT /api/admin/accounts/{id}/password", () => {
  const login = (email: string, password: string) => new Browser(gw.url).call("POST", "/api/login", { email, password });

  it("gives an account made without a password its login, audited", async () => {
    const a = await admin();
    const email = freshEmail();
    const made = await body(await a.b.call("POST", "/api/admin/accounts", { email }));
    const res = await a.b.call("PUT", `/api/admin/accounts/${made.id}/password`, { password: "operator's pick" });
    expect(res.status).toBe(200);
    expect(await body(res)).toEqual({ password_changed: true, sessions_ended: 0 });
    expect((await login(email, "operator's pick")).status).toBe(200);
    expect(auditOf(made.id).map((r) => [r.actor_account_id, r.action])).toEqual([
      [a.id, "account_created"],
      [a.id, "password_set"],
    ]);
  });

  it("replaces a holder's password and ends every session of theirs: the old password and the old cookie open nothing", async () => {
    const a = await admin();
    const h = await holder();
    const res = await a.b.call("PUT", `/api/admin/accounts/${h.id}/password`, { password: "a new one here" });
    expect((await body(res)).sessions_ended).toBe(1);
    await refusedWith(await h.b.call("GET", "/api/me"), 401, "no-session");
    await refusedWith(await login(h.email, "correct horse"), 401, "invalid_credentials");
    expect((await login(h.email, "a new one here")).status).toBe(200);
  });

  it("keeps the admin's own session when the account is the admin's", async () => {
    const a = await admin();
    expect(await body(await a.b.call("PUT", `/api/admin/accounts/${a.id}/password`, { password: "my own new one" }))).toEqual({ password_changed: true, sessions_ended: 0 });
    expect((await a.b.call("GET", "/api/me")).status).toBe(200);
  });

  it("refuses a short password or a body without one with 400, changing nothing", async () => {
    const a = await admin();
    const h = await holder();
    await refusedWith(await a.b.call("PUT", `/api/admin/accounts/${h.id}/password`, { password: "short" }), 400, "invalid_request");
    await refusedWith(await a.b.call("PUT", `/api/admin/accounts/${h.id}/password`, {}), 400, "invalid_request");
    expect((await h.b.call("GET", "/api/me")).status).toBe(200);
    expect((await login(h.email, "correct horse")).status).toBe(200);
    expect(auditOf(h.id)).toEqual([]);
  });
});

describe("POST and DELETE /api/admin/accounts/{id}/keys", () => {
  it("makes a key for the account, whole once in the answer, audited; requests on it spend that account's balance", async () => {
    const a = await admin();
    const h = await holder();
    const res = await a.b.call("POST", `/api/admin/accounts/${h.id}/keys`, { name: "for-ci" });
    expect(res.status).toBe(201);
    const k = await body(res);
    expect(k.key).toStartWith("gk_sk_");
    const before = balanceOf(h.id);
    expect((await chat(k.key)).status).toBe(200);
    const cost = sqlGet<{ c: number }>(gw, "SELECT cost_nano AS c FROM request_logs WHERE key_id = ?", k.id).c;
    expect(cost).toBeGreaterThan(0);
    expect(balanceOf(h.id)).toBe(before - cost);
    expect(auditOf(h.id)).toEqual([{ actor_account_id: a.id, action: "key_created", detail: `key ${k.id} (${k.prefix}) for-ci` }]);
    expect((await body(await h.b.call("GET", "/api/keys"))).data.map((x: { id: number }) => x.id)).toEqual([k.id]);
  });

  it("refuses bad key rules with 400 naming the field, making no key", async () => {
    const a = await admin();
    const h = await holder();
    expect(await refusedWith(await a.b.call("POST", `/api/admin/accounts/${h.id}/keys`, { quota_usd: -3 }), 400, "invalid_request")).toStartWith("quota_usd: ");
    expect(sqlAll(gw, "SELECT id FROM api_keys WHERE account_id = ?", h.id)).toEqual([]);
  });

  it("revokes one of the account's keys, audited, after which the key is refused", async () => {
    const a = await admin();
    const h = await holder();
    const k = await body(await h.b.call("POST", "/api/keys", {}));
    const res = await a.b.call("DELETE", `/api/admin/accounts/${h.id}/keys/${k.id}`);
    expect(await body(res)).toMatchObject({ id: k.id, status: "revoked" });
    expect((await chat(k.key)).status).toBe(403);
    expect(auditOf(h.id).map((r) => r.action)).toEqual(["key_revoked"]);
  });

  it("answers another account's key, or none, with 404 key_not_found, revoking nothing", async () => {
    const a = await admin();
    const h = await holder();
    const other = await holder();
    const k = await body(await other.b.call("POST", "/api/keys", {}));
    await refusedWith(await a.b.call("DELETE", `/api/admin/accounts/${h.id}/keys/${k.id}`), 404, "key_not_found");
    await refusedWith(await a.b.call("DELETE", `/api/admin/accounts/${h.id}/keys/x`), 404, "key_not_found");
    expect((await chat(k.key)).status).toBe(200);
  });
});
