// A provider key's rest (the upstream's 429 with a Retry-After) learnt by one instance of a cluster
// is kept by the others on the same PostgreSQL, which then leave the key alone until it wakes
// (docs/scaling.md#provider-keys-rests).
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { startGatewayOnPostgres, type RunningGateway } from "../../src/server.ts";
import { body, Browser } from "../api/support.ts";
import { postgresConfig } from "../support/cluster.ts";
import { startMockUpstream, type MockUpstream } from "../support/mock-upstream.ts";
import { startPostgres, type TestPostgres } from "../support/postgres.ts";

setDefaultTimeout(60_000);

let pg: TestPostgres;
let up: MockUpstream;
let a: RunningGateway;
let b: RunningGateway;
/** An admin's session, valid on both instances. */
let admin: Browser;
/** A holder's key with $1 of starting credit. */
let apiKey: string;

/** One provider per test: a rest in one never touches another's keys. */
const PROVIDERS = { pair: ["sk-pair-1", "sk-pair-2"], solo: ["sk-solo"], brief: ["sk-brief"], status: ["sk-status"] };

beforeAll(async () => {
  [pg, up] = await Promise.all([startPostgres(), startMockUpstream()]);
  const url = await pg.createDatabase("rests");
  const config = (instanceId: string) =>
    postgresConfig(url, {
      instanceId,
      server: { trust_proxy: ["127.0.0.1"] },
      providers: Object.entries(PROVIDERS).map(([id, keys]) => ({ id, kind: "anthropic", base_url: up.url, ...(keys.length > 1 ? { api_keys: keys } : { api_key: keys[0] }) })),
      models: Object.keys(PROVIDERS).map((id) => ({
        id: `${id}-x`, modalities: ["text"], endpoints: ["messages"], pricing: { input: 3, output: 15 }, routes: [{ provider: id, model: `${id}-up` }],
      })),
    });
  a = await startGatewayOnPostgres(config("rests-a"), { port: 0, quiet: true });
  b = await startGatewayOnPostgres(config("rests-b"), { port: 0, quiet: true });
  admin = new Browser(a.url);
  await admin.register();
  await a.services.accounts.setAdmin((await body(await admin.call("GET", "/api/me"))).id, true);
  apiKey = (await body(await admin.call("POST", "/api/keys", { name: "rests" }))).key;
});

afterAll(async () => {
  await a?.stop();
  await b?.stop();
  await Promise.all([up?.stop(), pg?.stop()]);
});

function ask(gw: RunningGateway, model: string): Promise<Response> {
  return fetch(`${gw.url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": apiKey, "content-type": "application/json", "anthropic-version": "2023-06-01" },
    body: JSON.stringify({ model, max_tokens: 50, messages: [{ role: "user", content: "hi" }] }),
  });
}

/** The upstream keys of the calls made since `from` (an index into the mock's requests). */
const keysCalled = (from: number) => up.requests.slice(from).map((r) => r.headers["x-api-key"]);

/** The keys of `model`'s route as `gw`'s admin status shows them. */
async function keysOn(gw: RunningGateway, model: string): Promise<{ index: number; state: string; resting_until: string | null }[]> {
  const seen = new Browser(gw.url, admin.ip);
  seen.cookie = admin.cookie;
  const status = await body(await seen.call("GET", "/api/admin/status"));
  return status.routes.find((m: { id: string }) => m.id === model).routes[0].keys;
}

/** Waits (up to 5 s) until `gw` shows the key at `index` of `model` resting; then its keys. */
async function untilResting(gw: RunningGateway, model: string, index: number): Promise<Awaited<ReturnType<typeof keysOn>>> {
  const start = performance.now();
  for (;;) {
    const keys = await keysOn(gw, model);
    if (keys[index]!.state === "resting") return keys;
    if (performance.now() - start > 5_000) throw new Error(`after 5 s instance B shows the keys as ${JSON.stringify(keys)}`);
    await Bun.sleep(20);
  }
}

/** Instance A calls `model` once, its first key answering 429 with `retryAfterS`. */
async function restOnA(model: string, retryAfterS: number): Promise<Response> {
  up.script({ kind: "error", status: 429, headers: { "retry-after": String(retryAfterS) } });
  const res = await ask(a, model);
  await res.arrayBuffer();
  return res;
}

describe("a provider key's rest shared by the instances of a cluster", () => {
  it("another instance uses the provider's other key while the first rests", async () => {
    const from = up.requests.length;
    expect((await restOnA("pair-x", 60)).status).toBe(200);
    expect(keysCalled(from)).toEqual(["sk-pair-1", "sk-pair-2"]);
    await untilResting(b, "pair-x", 0);
    const res = await ask(b, "pair-x");
    expect(res.status).toBe(200);
    expect(keysCalled(from + 2)).toEqual(["sk-pair-2"]);
  });

  it("another instance answers 529 with Retry-After, calling nobody and charging nothing, while the only key rests", async () => {
    const from = up.requests.length;
    expect((await restOnA("solo-x", 60)).status).toBe(529);
    await untilResting(b, "solo-x", 0);
    const before = await body(await admin.call("GET", "/api/me"));
    const res = await ask(b, "solo-x");
    expect(res.status).toBe(529);
    expect((await body(res)).error.type).toBe("overloaded_error");
    expect(Number(res.headers.get("retry-after"))).toBeWithin(50, 61);
    expect(keysCalled(from)).toEqual(["sk-solo"]);
    // A refused request's hold is let go by a statement of its own after the answer (the void does
    // not hold the answer back), so what is held comes back shortly; the balance never moved.
    let after = await body(await admin.call("GET", "/api/me"));
    for (const start = performance.now(); after.held_usd !== before.held_usd && performance.now() - start < 5_000; ) {
      await Bun.sleep(20);
      after = await body(await admin.call("GET", "/api/me"));
    }
    expect([after.balance_usd, after.held_usd]).toEqual([before.balance_usd, before.held_usd]);
  });

  it("the shared rest ends with its time, and the other instance calls the key again", async () => {
    const from = up.requests.length;
    expect((await restOnA("brief-x", 2)).status).toBe(529);
    const keys = await untilResting(b, "brief-x", 0);
    const wake = Date.parse(keys[0]!.resting_until!);
    expect((await ask(b, "brief-x")).status).toBe(529);
    expect(keysCalled(from)).toEqual(["sk-brief"]);
    await Bun.sleep(Math.max(0, wake - Date.now()) + 100);
    const res = await ask(b, "brief-x");
    expect(res.status).toBe(200);
    expect(keysCalled(from)).toEqual(["sk-brief", "sk-brief"]);
  });

  it("the other instance's admin status shows the key resting until the time the upstream gave", async () => {
    await restOnA("status-x", 60);
    const keys = await untilResting(b, "status-x", 0);
    // Learnt, not met: B's own count of rests stays 0.
    expect(keys[0]).toMatchObject({ index: 0, state: "resting", rests: 0 });
    expect(Date.parse(keys[0]!.resting_until!) - Date.now()).toBeWithin(50_000, 61_000);
  });
});
