import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import type { TestGateway } from "../support/gateway.ts";
import { getWithKey, postWithApiKey, sqlGet } from "../support/keyed.ts";
import { body, dashboardGateway, registeredBrowser } from "./support.ts";

// Every login and registration hashes a password with Argon2id: a few seconds a test on a loaded machine.
setDefaultTimeout(30_000);

// docs/dashboard.md, Keys: the CLI's key rules (auth/keys.ts keyRules) on the session's own account.

let gw: TestGateway;
beforeAll(async () => {
  gw = await dashboardGateway();
});
afterAll(() => gw.stop());

const holder = () => registeredBrowser(gw);

const chat = (key: string) => postWithApiKey(gw, "/v1/chat/completions", { model: "demo", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }, key);

describe("POST /api/keys", () => {
  it("creates a key with its restrictions and shows the whole key once, in the answer", async () => {
    const b = await holder();
    const res = await b.call("POST", "/api/keys", {
      name: "ci",
      quota_usd: 0.5,
      models: ["demo"],
      ip_allow: ["10.0.0.0/8"],
      rpm: 15,
      expires_at: "2099-01-01T00:00:00Z",
    });
    expect(res.status).toBe(201);
    const k = await body(res);
    expect(k).toMatchObject({
      object: "key",
      name: "ci",
      status: "active",
      quota_usd: 0.5,
      spent_usd: 0,
      models: ["demo-text-1"],
      ip_allow: ["10.0.0.0/8"],
      rpm: 15,
      expires_at: "2099-01-01T00:00:00.000Z",
      revoked_at: null,
    });
    expect(k.key).toMatch(/^gk_sk_[A-Za-z0-9]{40}$/);
    expect(k.key).toStartWith(k.prefix);
    const listed = (await body(await b.call("GET", "/api/keys"))).data;
    expect(JSON.stringify(listed)).not.toContain(k.key);
  });

  it("creates a key that works on /v1 and spends the account's balance", async () => {
    const b = await holder();
    const { key } = await body(await b.call("POST", "/api/keys", {}));
    expect((await chat(key)).status).toBe(200);
    expect((await body(await b.call("GET", "/api/me"))).balance_usd).toBeLessThan(1);
  });

  it("resolves a model alias to the canonical id, as the CLI does", async () => {
    const b = await holder();
    expect((await body(await b.call("POST", "/api/keys", { models: ["demo-text"] }))).models).toEqual(["demo-text-1"]);
  });

  it("refuses a model not in the catalog, naming models", async () => {
    const res = await (await holder()).call("POST", "/api/keys", { models: ["gpt-9"] });
    expect(res.status).toBe(400);
    expect((await body(res)).error.message).toBe("models: no model 'gpt-9' in this installation's catalog");
  });

  it("refuses an expiry in the past, naming expires_at", async () => {
    const res = await (await holder()).call("POST", "/api/keys", { expires_at: "2001-01-01T00:00:00Z" });
    expect(res.status).toBe(400);
    expect((await body(res)).error.message).toStartWith("expires_at: ");
  });

  it("refuses an address list that is no CIDR, naming ip_allow", async () => {
    const res = await (await holder()).call("POST", "/api/keys", { ip_allow: ["10.0.0.0/33"] });
    expect(res.status).toBe(400);
    expect((await body(res)).error.message).toStartWith("ip_allow: ");
  });

  it("refuses an rpm of 0, naming rpm", async () => {
    const res = await (await holder()).call("POST", "/api/keys", { rpm: 0 });
    expect((await body(res)).error.message).toStartWith("rpm: requests per minute must be a whole number of at least 1");
  });

  it("refuses an rpm above the gateway's limit per key ([limits] default_rpm, 20), naming rpm", async () => {
    const res = await (await holder()).call("POST", "/api/keys", { rpm: 21 });
    expect(res.status).toBe(400);
    expect((await body(res)).error.message).toStartWith("rpm: at most 20 requests per minute");
  });

  it("says whom to ask for a higher rpm, naming no command a holder cannot run", async () => {
    const res = await (await holder()).call("POST", "/api/keys", { rpm: 21 });
    expect((await body(res)).error.message).toBe("rpm: at most 20 requests per minute; the gateway's operator can raise a key's limit.");
  });

  it("refuses a field it does not know", async () => {
    const res = await (await holder()).call("POST", "/api/keys", { owner: "someone" });
    expect(res.status).toBe(400);
  });
});

describe("GET /api/keys", () => {
  it("lists the session's own keys only, oldest first", async () => {
    const a = await holder();
    const other = await holder();
    await a.call("POST", "/api/keys", { name: "one" });
    await a.call("POST", "/api/keys", { name: "two" });
    await other.call("POST", "/api/keys", { name: "theirs" });
    expect((await body(await a.call("GET", "/api/keys"))).data.map((k: { name: string }) => k.name)).toEqual(["one", "two"]);
  });
});

describe("PATCH /api/keys/:id", () => {
  it("changes the restrictions given and leaves the others", async () => {
    const b = await holder();
    const k = await body(await b.call("POST", "/api/keys", { name: "old", rpm: 5, quota_usd: 1 }));
    const res = await b.call("PATCH", `/api/keys/${k.id}`, { name: "new", quota_usd: null });
    expect(res.status).toBe(200);
    expect(await body(res)).toMatchObject({ name: "new", rpm: 5, quota_usd: null });
  });

  it("keeps an rpm the operator raised when the holder saves the key, but goes no higher", async () => {
    const b = await holder();
    const k = await body(await b.call("POST", "/api/keys", { name: "busy" }));
    await gw.services.keys.update(k.id, { rpm: 100 });
    const saved = await b.call("PATCH", `/api/keys/${k.id}`, { name: "busy", rpm: 100 });
    expect(saved.status).toBe(200);
    expect(await body(saved)).toMatchObject({ rpm: 100 });
    const raised = await b.call("PATCH", `/api/keys/${k.id}`, { rpm: 101 });
    expect(raised.status).toBe(400);
    expect((await body(raised)).error.message).toStartWith("rpm: at most 100 requests per minute");
  });

  it("takes effect on /v1 at once: a model taken off the list is refused with 403 model", async () => {
    const b = await holder();
    const k = await body(await b.call("POST", "/api/keys", {}));
    await b.call("PATCH", `/api/keys/${k.id}`, { models: ["demo-image"] });
    const res = await chat(k.key);
    expect(res.status).toBe(403);
    expect((await body(res)).error.code).toBe("model");
  });

  it("refuses an empty change", async () => {
    const b = await holder();
    const k = await body(await b.call("POST", "/api/keys", {}));
    expect((await b.call("PATCH", `/api/keys/${k.id}`, {})).status).toBe(400);
  });

  it("answers 404 key_not_found for another account's key, and changes nothing", async () => {
    const owner = await holder();
    const k = await body(await owner.call("POST", "/api/keys", { name: "mine" }));
    const res = await (await holder()).call("PATCH", `/api/keys/${k.id}`, { name: "stolen" });
    expect(res.status).toBe(404);
    expect((await body(res)).error.code).toBe("key_not_found");
    expect(sqlGet<{ name: string }>(gw, "SELECT name FROM api_keys WHERE id = ?", k.id).name).toBe("mine");
  });
});

describe("DELETE /api/keys/:id", () => {
  it("revokes the key: its next /v1 call is refused with 403 inactive", async () => {
    const b = await holder();
    const k = await body(await b.call("POST", "/api/keys", {}));
    const res = await b.call("DELETE", `/api/keys/${k.id}`);
    expect(res.status).toBe(200);
    expect((await body(res)).status).toBe("revoked");
    const refused = await getWithKey(gw, "/v1/me", k.key);
    expect(refused.status).toBe(403);
    expect((await body(refused)).error.code).toBe("inactive");
  });

  it("answers 404 key_not_found for another account's key, and leaves it active", async () => {
    const owner = await holder();
    const k = await body(await owner.call("POST", "/api/keys", {}));
    expect((await (await holder()).call("DELETE", `/api/keys/${k.id}`)).status).toBe(404);
    expect((await getWithKey(gw, "/v1/me", k.key)).status).toBe(200);
  });

  it("answers 404 key_not_found for an id that is not a number", async () => {
    expect((await (await holder()).call("DELETE", "/api/keys/abc")).status).toBe(404);
  });
});

describe("a key's budget in /api/keys", () => {
  it("creates a key with budget_usd and budget_period, shown in the list with its spend this period", async () => {
    const b = await holder();
    const res = await b.call("POST", "/api/keys", { budget_usd: "2.5", budget_period: "week" });
    expect(res.status).toBe(201);
    const k = await body(res);
    expect(k).toMatchObject({ budget_usd: 2.5, budget_period: "week", budget: { limit_usd: 2.5, period: "week", spent_usd: 0, reached: false } });
    expect((await chat(k.key)).status).toBe(200);
    const listed = (await body(await b.call("GET", "/api/keys"))).data.find((x: { id: number }) => x.id === k.id);
    expect(listed.budget.spent_usd).toBeGreaterThan(0);
    expect(listed.budget.spent_usd).toBe(listed.spent_usd);
  });

  it("updates the budget, removes it with budget_usd null, and shows the page's notice once a call is refused", async () => {
    const b = await holder();
    const k = await body(await b.call("POST", "/api/keys", {}));
    const set = await body(await b.call("PATCH", `/api/keys/${k.id}`, { budget_usd: 0, budget_period: "day" }));
    expect(set).toMatchObject({ budget_usd: 0, budget_period: "day", budget: { reached: false } });
    expect((await chat(k.key)).status).toBe(429);
    expect((await body(await b.call("GET", "/api/keys"))).data.find((x: { id: number }) => x.id === k.id).budget.reached).toBe(true);
    const removed = await body(await b.call("PATCH", `/api/keys/${k.id}`, { budget_usd: null }));
    expect(removed).toMatchObject({ budget_usd: null, budget_period: null, budget: null });
    expect((await chat(k.key)).status).toBe(200);
  });

  it("refuses a negative budget, a period it does not know and an amount without its period, naming the field, and writes nothing", async () => {
    const b = await holder();
    const cases: [Record<string, unknown>, string][] = [
      [{ budget_usd: -1, budget_period: "day" }, "budget_usd: "],
      [{ budget_usd: 5, budget_period: "year" }, "budget_period: a budget resets each day, week or month (UTC), not each year"],
      [{ budget_usd: 5 }, "budget_period: give the budget's period with its amount"],
      [{ budget_period: "day" }, "budget_usd: give the budget's amount"],
    ];
    for (const [sent, why] of cases) {
      const res = await b.call("POST", "/api/keys", sent);
      expect(res.status).toBe(400);
      const e = (await body(res)).error;
      expect([e.type, e.code]).toEqual(["invalid_request", "invalid_request"]);
      expect(e.message).toStartWith(why);
    }
    expect((await body(await b.call("GET", "/api/keys"))).data).toHaveLength(0);
  });
});
