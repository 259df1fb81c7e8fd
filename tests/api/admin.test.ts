import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import type { TestGateway } from "../support/gateway.ts";
import { postWithApiKey, sqlAll } from "../support/keyed.ts";
import { adminOn, body, Browser, dashboardGateway, holderOn, refusedWith } from "./support.ts";

// Every login and registration hashes a password with Argon2id: a few seconds a test on a loaded machine.
setDefaultTimeout(30_000);

// docs/dashboard.md, Admin: the operator's routes under /api/admin/, for a session of an account
// marked admin; each action a ledger entry or an audit row naming the admin.

let gw: TestGateway;
beforeAll(async () => {
  gw = await dashboardGateway();
});
afterAll(() => gw.stop());

const holder = () => holderOn(gw);
const admin = () => adminOn(gw);

const auditOf = (targetId: number | null) =>
  sqlAll<{ actor_account_id: number | null; action: string; target_account_id: number | null; detail: string | null }>(
    gw,
    "SELECT actor_account_id, action, target_account_id, detail FROM audit_log WHERE target_account_id IS ? ORDER BY id",
    targetId,
  );

const ledgerOf = (accountId: number) =>
  sqlAll<{ kind: string; amount_nano: number; note: string | null }>(gw, "SELECT kind, amount_nano, note FROM ledger_entries WHERE account_id = ? ORDER BY id", accountId);

const balanceOf = (accountId: number) => sqlAll<{ balance_nano: number }>(gw, "SELECT balance_nano FROM accounts WHERE id = ?", accountId)[0]!.balance_nano;

describe("a session of an account that is not admin", () => {
  const routes: [string, string, unknown?][] = [
    ["GET", "/api/admin/accounts"],
    ["POST", "/api/admin/accounts/1/credit", { op: "credit", usd: 1, note: "x" }],
    ["POST", "/api/admin/accounts/1/debit", { op: "debit", usd: 1, note: "x" }],
    ["POST", "/api/admin/accounts/1/disable"],
    ["POST", "/api/admin/accounts/1/enable"],
    ["POST", "/api/admin/pause"],
    ["POST", "/api/admin/resume"],
    ["GET", "/api/admin/status"],
    ["GET", "/api/admin/audit"],
  ];
  for (const [method, path, payload] of routes) {
    it(`is refused on ${method} ${path} with 403 admin, and nothing happens`, async () => {
      const h = await holder();
      const ledgerBefore = ledgerOf(1).length;
      const res = await h.b.call(method, path, payload);
      expect((await body(res)).error).toMatchObject({ type: "permission_error", code: "admin" });
      expect(res.status).toBe(403);
      expect(ledgerOf(1).length).toBe(ledgerBefore);
      expect(gw.services.settings.paused).toBe(false);
    });
  }

  it("is refused without a session with 401 no-session", async () => {
    await refusedWith(await new Browser(gw.url).call("GET", "/api/admin/accounts"), 401, "no-session");
  });
});

describe("GET /api/admin/accounts", () => {
  it("lists every account with balance, held, keys, spend this month and last activity", async () => {
    const a = await admin();
    const h = await holder();
    const k = await body(await h.b.call("POST", "/api/keys", {}));
    await postWithApiKey(gw, "/v1/chat/completions", { model: "demo", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }, k.key);
    const spent = -ledgerOf(h.id).filter((e) => e.kind === "charge").reduce((s, e) => s + e.amount_nano, 0);
    const list = await body(await a.b.call("GET", "/api/admin/accounts"));
    const row = list.data.find((r: { id: number }) => r.id === h.id);
    expect(row).toMatchObject({ email: h.email, admin: false, disabled: false, balance_usd: (1e9 - spent) / 1e9, held_usd: 0, keys: 1, spent_month_usd: spent / 1e9 });
    expect(Date.parse(row.last_activity_at)).toBeGreaterThan(Date.now() - 60_000);
    expect(Date.parse(row.created_at)).toBeGreaterThan(Date.now() - 60_000);
    expect(list.data.find((r: { id: number }) => r.id === a.id)).toMatchObject({ admin: true, keys: 0, spent_month_usd: 0, last_activity_at: null });
  });
});

describe("POST /api/admin/accounts/{id}/credit and /debit", () => {
  it("credits with an operator_credit ledger entry and an audit row naming the admin", async () => {
    const a = await admin();
    const h = await holder();
    const res = await a.b.call("POST", `/api/admin/accounts/${h.id}/credit`, { op: "credit", usd: 2.5, note: "goodwill" });
    expect(res.status).toBe(200);
    expect(await body(res)).toMatchObject({ id: h.id, balance_usd: 3.5 });
    expect(ledgerOf(h.id).at(-1)).toEqual({ kind: "operator_credit", amount_nano: 2_500_000_000, note: "goodwill" });
    expect(auditOf(h.id)).toEqual([{ actor_account_id: a.id, action: "account_credited", target_account_id: h.id, detail: "2.5 USD: goodwill" }]);
    expect((await body(await h.b.call("GET", "/api/me"))).balance_usd).toBe(3.5);
  });

  it("debits with an operator_debit ledger entry and an audit row naming the admin", async () => {
    const a = await admin();
    const h = await holder();
    const res = await a.b.call("POST", `/api/admin/accounts/${h.id}/debit`, { op: "debit", usd: "0.25", note: "refund reversed" });
    expect(await body(res)).toMatchObject({ id: h.id, balance_usd: 0.75 });
    expect(ledgerOf(h.id).at(-1)).toEqual({ kind: "operator_debit", amount_nano: -250_000_000, note: "refund reversed" });
    expect(auditOf(h.id)).toEqual([{ actor_account_id: a.id, action: "account_debited", target_account_id: h.id, detail: "0.25 USD: refund reversed" }]);
  });

  it("refuses a debit without a note, naming note", async () => {
    const a = await admin();
    const h = await holder();
    expect(await refusedWith(await a.b.call("POST", `/api/admin/accounts/${h.id}/debit`, { op: "debit", usd: 0.1 }), 400, "invalid_request")).toStartWith("note: ");
    expect(auditOf(h.id)).toEqual([]);
  });

  it("refuses a debit below a zero balance, and writes nothing", async () => {
    const a = await admin();
    const h = await holder();
    await refusedWith(await a.b.call("POST", `/api/admin/accounts/${h.id}/debit`, { op: "debit", usd: 5, note: "too much" }), 400, "invalid_request");
    expect(ledgerOf(h.id).map((e) => e.kind)).toEqual(["registration_credit"]);
    expect(auditOf(h.id)).toEqual([]);
    expect(balanceOf(h.id)).toBe(1_000_000_000);
  });

  it("refuses an amount of 0 or with more than 9 decimals, naming usd", async () => {
    const a = await admin();
    const h = await holder();
    expect(await refusedWith(await a.b.call("POST", `/api/admin/accounts/${h.id}/credit`, { op: "credit", usd: 0 }), 400, "invalid_request")).toStartWith("usd: ");
    expect(await refusedWith(await a.b.call("POST", `/api/admin/accounts/${h.id}/credit`, { op: "credit", usd: "0.0000000001" }), 400, "invalid_request")).toStartWith("usd: ");
  });

  it("refuses an account id that names no account with 404 account_not_found", async () => {
    const a = await admin();
    await refusedWith(await a.b.call("POST", "/api/admin/accounts/999999/credit", { op: "credit", usd: 1 }), 404, "account_not_found");
  });
});

describe("a credit or debit whose body names another op than its route", () => {
  // The dashboard once sent a debit to /credit because the op it read was missing: a body that
  // says which way the money goes is moved that way or not at all.
  const bodies: [route: "credit" | "debit", why: string, payload: Record<string, unknown>][] = [
    ["credit", "an unknown op", { op: "refund", usd: 1, note: "x" }],
    ["debit", "an empty op", { op: "", usd: 1, note: "x" }],
    ["credit", "the other op", { op: "debit", usd: 1, note: "x" }],
    ["debit", "the other op", { op: "credit", usd: 1, note: "x" }],
  ];
  for (const [route, why, payload] of bodies) {
    it(`is refused on /${route} with ${why}: 400 invalid_request naming op, and the balance is unchanged`, async () => {
      const a = await admin();
      const h = await holder();
      const message = await refusedWith(await a.b.call("POST", `/api/admin/accounts/${h.id}/${route}`, payload), 400, "invalid_request");
      expect(message).toStartWith("op: ");
      expect(balanceOf(h.id)).toBe(1_000_000_000);
      expect(ledgerOf(h.id).map((e) => e.kind)).toEqual(["registration_credit"]);
      expect(auditOf(h.id)).toEqual([]);
    });
  }
});

describe("a credit or debit whose body names no op", () => {
  it("moves the money the way its path says: /credit raises the balance, /debit lowers it", async () => {
    const a = await admin();
    const h = await holder();
    expect((await a.b.call("POST", `/api/admin/accounts/${h.id}/credit`, { usd: 2, note: "x" })).status).toBe(200);
    expect(balanceOf(h.id)).toBe(3_000_000_000);
    expect((await a.b.call("POST", `/api/admin/accounts/${h.id}/debit`, { usd: 0.5, note: "y" })).status).toBe(200);
    expect(balanceOf(h.id)).toBe(2_500_000_000);
    expect(ledgerOf(h.id).map((e) => e.kind)).toEqual(["registration_credit", "operator_credit", "operator_debit"]);
  });
});

describe("POST /api/admin/accounts/{id}/disable and /enable", () => {
  it("disables an account, whose session is then refused, with an audit row; enable undoes it", async () => {
    const a = await admin();
    const h = await holder();
    expect(await body(await a.b.call("POST", `/api/admin/accounts/${h.id}/disable`))).toMatchObject({ id: h.id, disabled: true });
    await refusedWith(await h.b.call("GET", "/api/me"), 403, "inactive");
    expect(await body(await a.b.call("POST", `/api/admin/accounts/${h.id}/enable`))).toMatchObject({ id: h.id, disabled: false });
    const back = new Browser(gw.url);
    expect((await back.call("POST", "/api/login", { email: h.email, password: "correct horse" })).status).toBe(200);
    expect((await back.call("GET", "/api/me")).status).toBe(200);
    expect(auditOf(h.id).map((r) => [r.actor_account_id, r.action])).toEqual([
      [a.id, "account_disabled"],
      [a.id, "account_enabled"],
    ]);
  });

  it("enable leaves the sessions opened before the disable ended: a stolen session does not come back", async () => {
    const a = await admin();
    const h = await holder();
    await a.b.call("POST", `/api/admin/accounts/${h.id}/disable`);
    await a.b.call("POST", `/api/admin/accounts/${h.id}/enable`);
    await refusedWith(await h.b.call("GET", "/api/me"), 401, "no-session");
  });

  it("refuses an admin disabling its own account", async () => {
    const a = await admin();
    await refusedWith(await a.b.call("POST", `/api/admin/accounts/${a.id}/disable`), 400, "invalid_request");
    expect((await a.b.call("GET", "/api/me")).status).toBe(200);
  });
});

describe("POST /api/admin/pause and /resume, GET /api/admin/status and /audit", () => {
  it("pauses the product (the next /v1 call is 503 product_paused) and resumes it, each with an audit row", async () => {
    const a = await admin();
    const h = await holder();
    const k = await body(await h.b.call("POST", "/api/keys", {}));
    const chat = () => postWithApiKey(gw, "/v1/chat/completions", { model: "demo", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }, k.key);
    try {
      expect(await body(await a.b.call("POST", "/api/admin/pause"))).toEqual({ paused: true });
      expect((await chat()).status).toBe(503);
      expect((await body(await a.b.call("GET", "/api/admin/status"))).paused).toBe(true);
    } finally {
      expect(await body(await a.b.call("POST", "/api/admin/resume"))).toEqual({ paused: false });
    }
    expect((await chat()).status).toBe(200);
    const actions = auditOf(null).filter((r) => r.actor_account_id === a.id).map((r) => r.action);
    expect(actions).toEqual(["product_paused", "product_resumed"]);
  });

  it("shows the route health of each model GET /status lists", async () => {
    const a = await admin();
    const s = await body(await a.b.call("GET", "/api/admin/status"));
    const pub = await body(await fetch(`${gw.url}/status`));
    expect(s.paused).toBe(false);
    expect(s.routes.map((m: { id: string }) => m.id)).toEqual(pub.models.map((m: { id: string }) => m.id));
  });

  it("lists the audit log newest first, naming the admin and the account by email", async () => {
    const a = await admin();
    const h = await holder();
    await a.b.call("POST", `/api/admin/accounts/${h.id}/credit`, { op: "credit", usd: 1, note: "thanks" });
    await a.b.call("POST", `/api/admin/accounts/${h.id}/disable`);
    const log = await body(await a.b.call("GET", "/api/admin/audit?limit=2"));
    expect(log.data.map((r: Record<string, unknown>) => ({ ...r, created_at: typeof r.created_at }))).toEqual([
      { actor_email: a.email, action: "account_disabled", target: h.email, detail: null, created_at: "string" },
      { actor_email: a.email, action: "account_credited", target: h.email, detail: "1 USD: thanks", created_at: "string" },
    ]);
  });
});
