// The account holder's /api/ on two instances sharing one PostgreSQL: a session opened on one is
// valid on the other, and every figure the dashboard shows comes from the shared database.
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import OpenAI from "openai";
import { startGatewayOnPostgres, type RunningGateway } from "../../src/server.ts";
import { body, Browser, refusedWith } from "../api/support.ts";
import { codeAt, enrolled, loginFirstStep } from "../support/two-factor.ts";
import { postgresConfig } from "../support/cluster.ts";
import { startMockUpstream, type MockUpstream } from "../support/mock-upstream.ts";
import { startPostgres, type TestPostgres } from "../support/postgres.ts";

setDefaultTimeout(60_000);

let pg: TestPostgres;
let up: MockUpstream;
let one: RunningGateway;
let two: RunningGateway;

beforeAll(async () => {
  [pg, up] = await Promise.all([startPostgres(), startMockUpstream()]);
  const url = await pg.createDatabase("dashboard");
  const config = (instanceId: string) =>
    postgresConfig(url, {
      instanceId,
      server: { trust_proxy: ["127.0.0.1"] },
      providers: [{ id: "openai", kind: "openai", base_url: up.openaiURL, api_key: "sk-up" }],
      models: [{ id: "gpt-x", modalities: ["text"], endpoints: ["chat.completions"], pricing: { input: 3, output: 15 }, routes: [{ provider: "openai", model: "gpt-x-1" }] }],
    });
  one = await startGatewayOnPostgres(config("dash-1"), { port: 0, quiet: true });
  two = await startGatewayOnPostgres(config("dash-2"), { port: 0, quiet: true });
});

afterAll(async () => {
  await one?.stop();
  await two?.stop();
  await Promise.all([up?.stop(), pg?.stop()]);
});

/** The same browser (its cookie) asking the other instance. */
function onOther(b: Browser): Browser {
  const other = new Browser(two.url, b.ip);
  other.cookie = b.cookie;
  return other;
}

describe("the dashboard on PostgreSQL", () => {
  it("registers with the starting credit, and the session works on the other instance", async () => {
    const b = new Browser(one.url);
    const { res } = await b.register();
    expect(res.status).toBe(201);
    const me = await body(await onOther(b).call("GET", "/api/me"));
    expect([me.balance_usd, me.held_usd]).toEqual([1, 0]);
  });

  it("makes a key shown once that the official SDK spends through either instance, and shows the spend", async () => {
    const b = new Browser(one.url);
    await b.register();
    const created = await body(await b.call("POST", "/api/keys", { name: "sdk" }));
    for (const base of [one.url, two.url]) {
      const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: created.key, maxRetries: 0 });
      const answer = await client.chat.completions.create({ model: "gpt-x", max_tokens: 20, messages: [{ role: "user", content: "hi" }] });
      expect(answer.choices[0]!.message.content).toBeTruthy();
    }
    const other = onOther(b);
    const keys = await body(await other.call("GET", "/api/keys"));
    expect(keys.data[0].spent_usd).toBeGreaterThan(0);
    expect(keys.data[0].held_usd).toBe(0);
    expect(keys.data[0].last_used_at).not.toBeNull();
    const requests = await body(await other.call("GET", "/api/requests"));
    expect(requests.data.map((r: { status: number }) => r.status)).toEqual([200, 200]);
    const ledger = await body(await other.call("GET", "/api/ledger"));
    expect(ledger.data.map((e: { kind: string; count?: number }) => [e.kind, e.count ?? null])).toEqual([["charges", 2], ["registration_credit", null]]);
    const daily = await body(await other.call("GET", "/api/usage/daily?days=1&by=model"));
    expect(daily.series.map((s: { id: string }) => s.id)).toEqual(["gpt-x"]);
  });

  it("a key revoked on one instance is refused by the other at once", async () => {
    const b = new Browser(one.url);
    await b.register();
    const created = await body(await b.call("POST", "/api/keys", { name: "soon revoked" }));
    const ask = () => fetch(`${two.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${created.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-x", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }),
    });
    expect((await ask()).status).toBe(200);
    expect((await b.call("DELETE", `/api/keys/${created.id}`)).status).toBe(200);
    const start = performance.now();
    let status = 200;
    while (status === 200 && performance.now() - start < 1000) {
      status = (await ask()).status;
      if (status === 200) await Bun.sleep(20);
    }
    expect(status).toBe(403);
  });

  it("logout-everywhere ends the session on both instances", async () => {
    const b = new Browser(one.url);
    await b.register();
    const other = onOther(b);
    expect((await other.call("POST", "/api/logout-all", {})).status).toBe(200);
    const after = new Browser(one.url, b.ip);
    after.cookie = b.cookie;
    expect((await after.call("GET", "/api/me")).status).toBe(401);
  });

  it("an admin on one instance credits an account and the other instance lists it, with the audit row", async () => {
    const admin = new Browser(one.url);
    await admin.register();
    const me = await body(await admin.call("GET", "/api/me"));
    await one.services.accounts.setAdmin(me.id, true);
    const holder = new Browser(two.url);
    await holder.register();
    const target = await body(await holder.call("GET", "/api/me"));
    const credited = await admin.call("POST", `/api/admin/accounts/${target.id}/credit`, { op: "credit", usd: "2.5", note: "welcome" });
    expect(credited.status).toBe(200);
    const listed = await body(await onOther(admin).call("GET", "/api/admin/accounts"));
    const row = listed.data.find((a: { id: number }) => a.id === target.id);
    expect([row.balance_usd, row.held_usd]).toEqual([3.5, 0]);
    const audit = await body(await onOther(admin).call("GET", "/api/admin/audit"));
    expect(audit.data[0]).toMatchObject({ action: "account_credited", actor_email: me.email, target: target.email });
  });

  it("an admin's credit retried on the other instance with its Idempotency-Key moves the money once", async () => {
    const admin = new Browser(one.url);
    await admin.register();
    await one.services.accounts.setAdmin((await body(await admin.call("GET", "/api/me"))).id, true);
    const holder = new Browser(two.url);
    await holder.register();
    const target = await body(await holder.call("GET", "/api/me"));
    const credit = (b: Browser) => b.call("POST", `/api/admin/accounts/${target.id}/credit`, { usd: "2", note: "retried" }, { "idempotency-key": "retry-1" });
    expect((await credit(admin)).status).toBe(200);
    const again = await credit(onOther(admin));
    expect([again.status, again.headers.get("idempotent-replayed")]).toEqual([200, "true"]);
    const listed = await body(await admin.call("GET", `/api/admin/accounts?q=${target.id}`));
    expect(listed.data.find((a: { id: number }) => a.id === target.id).balance_usd).toBe(3);
  });

  it("the admin status names the instance that answered and lists every running instance with what it holds", async () => {
    const admin = new Browser(one.url);
    await admin.register();
    await one.services.accounts.setAdmin((await body(await admin.call("GET", "/api/me"))).id, true);
    const [here, there] = [await body(await admin.call("GET", "/api/admin/status")), await body(await onOther(admin).call("GET", "/api/admin/status"))];
    expect([here.instance, there.instance]).toEqual(["dash-1", "dash-2"]);
    expect(there.instances.map((i: { id: string }) => i.id)).toEqual(["dash-1", "dash-2"]);
    for (const i of there.instances) {
      expect(i).toMatchObject({ holds: 0, held_usd: 0 });
      expect(Date.now() - Date.parse(i.heartbeat_at)).toBeLessThan(30_000);
    }
  });
});

describe("two-factor login on PostgreSQL", () => {
  it("the password on one instance, the code on the other; that code on a new login is refused on either", async () => {
    const h = await enrolled(one);
    const code = await codeAt(h.secret, 30);
    const first = await loginFirstStep(one, h);
    const there = new Browser(two.url, first.b.ip);
    const res = await there.call("POST", "/api/login/second-factor", { token: first.token, code });
    expect(res.status).toBe(200);
    expect((await there.call("GET", "/api/me")).status).toBe(200);
    for (const gw of [one, two]) {
      const again = await loginFirstStep(gw, h);
      await refusedWith(await again.b.call("POST", "/api/login/second-factor", { token: again.token, code }), 401, "invalid_second_factor");
    }
    await refusedWith(await there.call("POST", "/api/login/second-factor", { token: first.token, code: h.recovery[0] }), 401, "second_factor_expired");
  });
});
