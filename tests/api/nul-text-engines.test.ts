import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { FIXED_MODEL, GATEWAY_ENGINES, type EngineGateway } from "../support/engine-gateway.ts";
import { stopEngines } from "../support/engines.ts";
import { expectError } from "../support/errors.ts";
import { messagesBody, postWithApiKey } from "../support/keyed.ts";
import { Browser } from "./support.ts";

// This file's PostgreSQL server (support/engines.ts), after the gateways' own afterAll.
afterAll(stopEngines);
setDefaultTimeout(60_000);

// U+0000 in each text an /api/ route takes, on both engines (docs/dashboard.md#rules-every-route-keeps).
// PostgreSQL's text refuses the character and SQLite's keeps it: before the one check where the
// session guard reads a body and a query, an email, a key name, a note or a filter holding it reached
// a query and was answered 500 on PostgreSQL (the event line printing the email), and was stored on SQLite.

const NUL = "a\u0000b";

interface Case {
  name: string;
  method: string;
  /** `{id}`: the target account's id; `{key}`: the admin's own key's id. */
  path: string;
  body?: Record<string, unknown>;
}

const CASES: Case[] = [
  { name: "register's email", method: "POST", path: "/api/register", body: { email: "a\u0000@x.io", password: "correct horse" } },
  { name: "login's email", method: "POST", path: "/api/login", body: { email: "a\u0000@x.io", password: "correct horse" } },
  { name: "register's code", method: "POST", path: "/api/register", body: { email: "fresh-nul@x.io", password: "correct horse", code: NUL } },
  { name: "verify's token", method: "POST", path: "/api/verify", body: { token: NUL } },
  { name: "a new key's name", method: "POST", path: "/api/keys", body: { name: NUL } },
  { name: "a new key's models", method: "POST", path: "/api/keys", body: { models: [NUL] } },
  { name: "a new key's ip_allow", method: "POST", path: "/api/keys", body: { ip_allow: [NUL] } },
  { name: "a new key's budget_period", method: "POST", path: "/api/keys", body: { budget_usd: 1, budget_period: NUL } },
  { name: "a new key's expires_at", method: "POST", path: "/api/keys", body: { expires_at: NUL } },
  { name: "a new key's quota_usd", method: "POST", path: "/api/keys", body: { quota_usd: NUL } },
  { name: "a renamed key's name", method: "PATCH", path: "/api/keys/{key}", body: { name: NUL } },
  { name: "redeem's code", method: "POST", path: "/api/redeem", body: { code: NUL } },
  { name: "the low-balance threshold", method: "PUT", path: "/api/me/low-balance", body: { threshold_usd: NUL } },
  { name: "the new password", method: "POST", path: "/api/password", body: { current_password: "correct horse", new_password: `${NUL}long enough` } },
  { name: "the requests' model filter", method: "GET", path: `/api/requests?model=${encodeURIComponent(NUL)}` },
  { name: "the requests' cursor", method: "GET", path: `/api/requests?before=${encodeURIComponent(NUL)}` },
  { name: "the requests' key filter", method: "GET", path: `/api/requests?key_id=${encodeURIComponent(NUL)}` },
  { name: "the requests' status filter", method: "GET", path: `/api/requests?status=${encodeURIComponent(NUL)}` },
  { name: "the requests' since filter", method: "GET", path: `/api/requests?since=${encodeURIComponent(NUL)}` },
  { name: "the CSV's model filter", method: "GET", path: `/api/requests.csv?model=${encodeURIComponent(NUL)}` },
  { name: "the summary's model filter", method: "GET", path: `/api/usage/summary?model=${encodeURIComponent(NUL)}` },
  { name: "the daily usage's grouping", method: "GET", path: `/api/usage/daily?by=${encodeURIComponent(NUL)}` },
  { name: "the ledger's cursor", method: "GET", path: `/api/ledger?before=${encodeURIComponent(NUL)}` },
  { name: "the account search", method: "GET", path: `/api/admin/accounts?q=${encodeURIComponent(NUL)}` },
  { name: "the audit's limit", method: "GET", path: `/api/admin/audit?limit=${encodeURIComponent(NUL)}` },
  { name: "a new account's email", method: "POST", path: "/api/admin/accounts", body: { email: "b\u0000@x.io" } },
  { name: "the operator's note", method: "PUT", path: "/api/admin/accounts/{id}/note", body: { note: NUL } },
  { name: "an operator's password", method: "PUT", path: "/api/admin/accounts/{id}/password", body: { password: `${NUL}long enough` } },
  { name: "an operator's key name", method: "POST", path: "/api/admin/accounts/{id}/keys", body: { name: NUL } },
  { name: "a credit's note", method: "POST", path: "/api/admin/accounts/{id}/credit", body: { usd: 1, note: NUL } },
  { name: "a debit's note", method: "POST", path: "/api/admin/accounts/{id}/debit", body: { usd: 0.5, note: NUL } },
  { name: "a code batch's note", method: "POST", path: "/api/admin/codes", body: { usd: 1, note: NUL } },
  { name: "a code batch's expiry", method: "POST", path: "/api/admin/codes", body: { usd: 1, expires: NUL } },
];

/** Where the refusal says the character is: the body's field holding it, or the query's parameter. */
function fieldOf(c: Case): string {
  if (!c.body) return new URL(c.path, "http://x").searchParams.keys().next().value!;
  const [name, value] = Object.entries(c.body).find(([, v]) => JSON.stringify(v).includes("\\u0000"))!;
  return Array.isArray(value) ? `${name}[0]` : name;
}

const answers = new Map<string, string[]>();

for (const engine of GATEWAY_ENGINES) {
  describe(`U+0000 in a client's text on ${engine.name}`, () => {
    let gw: EngineGateway;
    let stop: () => Promise<void>;
    let admin: Browser;
    let adminKey: number;
    let target: { accountId: number; keyId: number };
    beforeAll(async () => {
      ({ gw, stop } = await engine.start({ models: [FIXED_MODEL] }));
      admin = new Browser(gw.url);
      expect((await admin.register()).res.status).toBe(201);
      const me = (await (await admin.call("GET", "/api/me")).json()) as { id: number };
      await gw.services.accounts.setAdmin(me.id, true);
      adminKey = (await gw.key(me.id)).keyId;
      target = await gw.account(5);
    });
    afterAll(() => stop());

    for (const c of CASES) {
      it(`refuses U+0000 in ${c.name} with 400 invalid_request naming the field`, async () => {
        const path = c.path.replace("{id}", String(target.accountId)).replace("{key}", String(adminKey));
        // Registering and logging in from a browser without a session, on an address of its own.
        const b = c.path === "/api/register" || c.path === "/api/login" ? new Browser(gw.url) : admin;
        const error = await expectError(await b.call(c.method, path, c.body), 400, "invalid_request");
        expect(error.message).toBe(`${fieldOf(c)}: U+0000 (the NUL character) is not allowed in text.`);
        answers.set(engine.name, [...(answers.get(engine.name) ?? []), `${c.name}: ${error.message}`]);
      });
    }

    it("creates, credits and stores nothing for the refused requests", async () => {
      expect(await gw.numbers("SELECT count(*) AS n FROM accounts")).toEqual({ n: 2 });
      expect(await gw.numbers("SELECT count(*) AS n FROM api_keys")).toEqual({ n: 2 });
      expect(await gw.numbers("SELECT count(*) AS n FROM code_batches")).toEqual({ n: 0 });
      expect((await gw.money(target.accountId)).balance).toBe(5_000_000_000);
      expect((await gw.ledgerRows(target.accountId)).length).toBe(1);
      const detail = (await (await admin.call("GET", `/api/admin/accounts/${target.accountId}`)).json()) as { note: { note: string | null } };
      expect(detail.note.note).toBeNull();
    });

    it("refuses an email holding another control character as not an email address, at registration and from the admin", async () => {
      for (const [path, email] of [["/api/register", "a\u0001@x.io"], ["/api/admin/accounts", "b\u007f@x.io"], ["/api/register", "c@x\u009f.io"]] as const) {
        const b = path === "/api/register" ? new Browser(gw.url) : admin;
        const error = await expectError(await b.call("POST", path, { email, password: "correct horse" }), 400, "invalid_request");
        expect(error.message).toBe(`not an email address: ${email}`);
      }
      expect(await gw.numbers("SELECT count(*) AS n FROM accounts")).toEqual({ n: 2 });
    });

    it("finds U+0000 30,000 arrays deep in a 64 KiB body: 400 naming the path's start, not a 500", async () => {
      const depth = 30_000;
      const body = `{"note":${"[".repeat(depth)}"a\\u0000b"${"]".repeat(depth)}}`;
      const error = await expectError(await admin.call("PUT", `/api/admin/accounts/${target.accountId}/note`, body), 400, "invalid_request");
      expect(error.message).toStartWith("note[0][0][0]");
      expect(error.message.length).toBeLessThan(300);
    });

    it("names the first field in the body's order when several hold U+0000", async () => {
      const error = await expectError(await admin.call("POST", `/api/admin/accounts/${target.accountId}/credit`, { usd: 1, note: NUL, extra: [NUL] }), 400, "invalid_request");
      expect(error.message).toStartWith("note: ");
    });

    it("answers a /v1 request naming a model that holds U+0000 with 404 model_not_found, and logs its row", async () => {
      const a = await gw.account(1);
      const res = await postWithApiKey(gw, "/v1/messages", messagesBody(16, "fi\u0000xed", "hi \u0000 there"), a.key);
      await expectError(res, 404, "model_not_found");
      const id = res.headers.get("x-gateway-request-id")!;
      // The request log row is written after the answer.
      for (let i = 0; i < 50 && (await gw.numbers("SELECT count(*) AS n FROM request_logs WHERE request_id = $1", id)).n === 0; i++) await Bun.sleep(50);
      expect(await gw.numbers("SELECT count(*) AS n, max(status) AS status FROM request_logs WHERE request_id = $1", id)).toEqual({ n: 1, status: 404 });
    });

    it("answers an id holding U+0000 in the path as naming nothing", async () => {
      await expectError(await admin.call("DELETE", `/api/keys/${encodeURIComponent(NUL)}`), 404, "key_not_found");
      await expectError(await admin.call("GET", `/api/admin/accounts/${encodeURIComponent(NUL)}`), 404, "account_not_found");
    });
  });
}

describe("both engines", () => {
  it("answer each U+0000 alike", () => {
    expect(answers.get("PostgreSQL")).toEqual(answers.get("SQLite")!);
    expect(answers.get("SQLite")).toHaveLength(CASES.length);
  });
});
