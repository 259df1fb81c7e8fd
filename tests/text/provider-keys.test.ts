import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { events } from "../../src/core/events.ts";
import { startMockUpstream, type MockUpstream } from "../support/mock-upstream.ts";
import type { TestGateway } from "../support/gateway.ts";
import { expectError } from "../support/errors.ts";
import { messagesBody, postWithApiKey } from "../support/keyed.ts";
import { PRICES } from "../support/prices.ts";
import { body, dashboardGateway, registeredBrowser } from "../api/support.ts";

// Several keys per provider (docs/operations.md#several-keys-and-weighted-routes): an overloaded
// key rests for its Retry-After and the request moves on to the next key before the client sees a
// byte. Each test has a provider of its own, so one test's resting keys are not another's.

// The admin's session is registered (Argon2id): seconds on a loaded machine.
setDefaultTimeout(30_000);

const KEYS = ["sk-first-key-0000", "sk-second-key-1111"];
const CASES = ["k429", "k529", "kovl", "kall", "kstatus", "kdefault", "kspread", "krevoked", "kcredit", "kbothbad"];

let up: MockUpstream;
let gw: TestGateway;
beforeAll(async () => {
  up = await startMockUpstream();
  gw = await dashboardGateway({
    limits: { default_rpm: 10_000 },
    providers: CASES.map((id) => ({ id, kind: "anthropic", base_url: up.url, api_keys: KEYS.map((k) => `${k}-${id}`) })),
    models: CASES.map((id) => ({ id, modalities: ["text"], endpoints: ["messages"], pricing: PRICES, routes: [{ provider: id, model: `${id}-up` }] })),
  });
});
afterAll(async () => {
  await gw.stop();
  await up.stop();
});

const ask = (model: string, key: string) => postWithApiKey(gw, "/v1/messages", messagesBody(20, model), key);
/** Which configured key (0 or 1) each of the last n upstream calls carried. */
const keysUsed = (n: number) => up.requests.slice(-n).map((r) => KEYS.findIndex((k) => r.headers["x-api-key"]?.startsWith(k)));

describe("spreading over the keys", () => {
  it("sends a request to the key with fewest in flight: two at once go out on both keys", async () => {
    const a = await gw.account(1);
    up.script({ kind: "slow_stream", events: 4, intervalMs: 150 }, { kind: "slow_stream", events: 4, intervalMs: 150 });
    const first = ask("kspread", a.key);
    // The first is in flight upstream (its mock answer takes 600 ms) when the second is picked.
    while (up.requests.length === 0 || !up.requests.at(-1)!.headers["x-api-key"]?.endsWith("kspread")) await Bun.sleep(5);
    const second = ask("kspread", a.key);
    expect([(await first).status, (await second).status]).toEqual([200, 200]);
    expect(keysUsed(2)).toEqual([0, 1]);
    const slots = gw.services.capacity.pool("kspread").slots;
    expect(slots.map((s) => s.inFlight)).toEqual([0, 0]);
  });

  it("holds a streamed answer's key in flight until its stream ends, then lets it go", async () => {
    const a = await gw.account(1);
    up.script({ kind: "slow_stream", events: 6, intervalMs: 100 });
    const res = await postWithApiKey(gw, "/v1/messages", { ...messagesBody(20, "kspread"), stream: true }, a.key);
    expect(res.status).toBe(200);
    const slots = gw.services.capacity.pool("kspread").slots;
    expect(slots.map((s) => s.inFlight)).toEqual([1, 0]);
    await res.text();
    await Bun.sleep(50);
    expect(slots.map((s) => s.inFlight)).toEqual([0, 0]);
  });
});

describe("an overloaded key rests and the next key serves", () => {
  it("a 429 with Retry-After: 2 rests the key; the request succeeds on the second key; the first serves again after 2 s", async () => {
    const a = await gw.account(1);
    up.script({ kind: "error", status: 429, headers: { "retry-after": "2" } }, { kind: "text", text: "from the second key" });
    const res = await ask("k429", a.key);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { content: { text: string }[] }).content[0]!.text).toBe("from the second key");
    expect(keysUsed(2)).toEqual([0, 1]);
    // Resting: the next request goes straight to the second key.
    expect((await ask("k429", a.key)).status).toBe(200);
    expect(keysUsed(1)).toEqual([1]);
    await Bun.sleep(2_100);
    expect((await ask("k429", a.key)).status).toBe(200);
    expect(keysUsed(1)).toEqual([0]);
  });

  it("a 529 rests the key for its Retry-After given as an HTTP date, and the second key serves", async () => {
    const a = await gw.account(1);
    up.script({ kind: "error", status: 529, headers: { "retry-after": new Date(Date.now() + 60_000).toUTCString() } });
    expect((await ask("k529", a.key)).status).toBe(200);
    expect(keysUsed(2)).toEqual([0, 1]);
    expect((await ask("k529", a.key)).status).toBe(200);
    expect(keysUsed(1)).toEqual([1]);
  });

  it("an overloaded_error body under another status (503) rests the key like a 529", async () => {
    const a = await gw.account(1);
    up.script({ kind: "error", status: 503, body: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }, headers: { "retry-after": "60" } });
    expect((await ask("kovl", a.key)).status).toBe(200);
    expect(keysUsed(2)).toEqual([0, 1]);
    expect((await ask("kovl", a.key)).status).toBe(200);
    expect(keysUsed(1)).toEqual([1]);
  });

  it("a key overloaded without a Retry-After rests 30 s", async () => {
    const a = await gw.account(1);
    up.script({ kind: "raw", status: 429, body: { type: "error", error: { type: "rate_limit_error", message: "slow down" } } });
    const before = Date.now();
    expect((await ask("kdefault", a.key)).status).toBe(200);
    const slot = gw.services.capacity.pool("kdefault").slots[0]!;
    expect(slot.restUntil - before).toBeGreaterThanOrEqual(29_000);
    expect(slot.restUntil - before).toBeLessThanOrEqual(31_000 + (Date.now() - before));
  });
});

describe("every key resting", () => {
  it("answers 529 overloaded_error with a Retry-After, calls no upstream, and moves no money", async () => {
    const a = await gw.account(1);
    up.script(
      { kind: "error", status: 429, body: { type: "error", error: { type: "rate_limit_error", message: "slow down" } }, headers: { "retry-after": "40" } },
      { kind: "error", status: 529, headers: { "retry-after": "20" } },
    );
    const first = await ask("kall", a.key);
    expect(keysUsed(2)).toEqual([0, 1]);
    // The last vendor answer was its own 529: its text goes through, with when the first key wakes.
    await expectError(first, 529, "overloaded_error");
    expect(Number(first.headers.get("retry-after"))).toBeWithin(19, 21);
    const calls = up.requests.length;
    const second = await ask("kall", a.key);
    await expectError(second, 529, "overloaded_error");
    expect(Number(second.headers.get("retry-after"))).toBeWithin(19, 21);
    expect(up.requests.length).toBe(calls);
    const m = gw.money(a.accountId);
    expect(m.balance).toBe(1_000_000_000);
    expect(m.openHolds).toBe(0);
    expect(m.ledgerSum).toBe(m.balance);
  });
});

describe("a key the provider rejects", () => {
  const rejected = { kind: "error", status: 401, headers: {}, body: { type: "error", error: { type: "authentication_error", message: "invalid x-api-key" } } } as const;

  it("sits out five minutes while the provider's next key serves the same request, and the operator's event names it", async () => {
    const a = await gw.account(1);
    const lines: Record<string, unknown>[] = [];
    const restore = events.redirect((line) => lines.push(JSON.parse(line) as Record<string, unknown>));
    try {
      up.script(rejected);
      const res = await ask("krevoked", a.key);
      expect(res.status).toBe(200);
      expect(keysUsed(2)).toEqual([0, 1]);
      const id = res.headers.get("x-gateway-request-id");
      const e = lines.find((l) => l.request_id === id && l.event === "provider_key_rejected")!;
      expect(e).toMatchObject({ key_index: 0 });
      expect(e.msg).toBe(`the provider rejected the gateway's key for provider krevoked: check providers[${CASES.indexOf("krevoked")}].api_keys[0]`);
    } finally {
      restore();
    }
    const [first] = gw.services.capacity.pool("krevoked").slots;
    expect(first!.restUntil - Date.now()).toBeWithin(290_000, 300_001);
    // The next request goes straight to the key that works.
    expect((await ask("krevoked", a.key)).status).toBe(200);
    expect(keysUsed(1)).toEqual([1]);
  });

  it("out of credit on one key (429 insufficient_quota): the next key serves", async () => {
    const a = await gw.account(1);
    up.script({ kind: "error", status: 429, headers: {}, body: { type: "error", error: { type: "insufficient_quota", message: "Your credit balance is too low." } } });
    expect((await ask("kcredit", a.key)).status).toBe(200);
    expect(keysUsed(2)).toEqual([0, 1]);
  });

  it("every key refused: the vendor's own refusal is the answer and nothing is charged", async () => {
    const a = await gw.account(1);
    up.script(rejected, rejected);
    const res = await ask("kbothbad", a.key);
    await expectError(res, 401, "authentication_error");
    expect(keysUsed(2)).toEqual([0, 1]);
    const m = gw.money(a.accountId);
    expect(m.balance).toBe(1_000_000_000);
    expect(m.openHolds).toBe(0);
    expect(m.ledgerSum).toBe(m.balance);
  });
});

describe("status", () => {
  it("shows a resting key to the admin by index and fingerprint, never the key; /status calls the model degraded", async () => {
    const a = await gw.account(1);
    up.script({ kind: "error", status: 429, headers: { "retry-after": "60" } });
    expect((await ask("kstatus", a.key)).status).toBe(200);
    const b = await registeredBrowser(gw);
    await gw.services.accounts.setAdmin((await body(await b.call("GET", "/api/me"))).id, true);
    const res = await b.call("GET", "/api/admin/status");
    const text = await res.text();
    for (const k of KEYS) expect(text).not.toContain(k);
    const route = (JSON.parse(text).routes as { id: string; routes: any[] }[]).find((m) => m.id === "kstatus")!.routes[0];
    expect(route.resting_until).toBeNull();
    expect(route.keys).toMatchObject([
      { index: 0, state: "resting", in_flight: 0, rests: 1 },
      { index: 1, state: "ready", in_flight: 0, rests: 0, resting_until: null },
    ]);
    expect(route.keys[0].fingerprint).toMatch(/^[0-9a-f]{8}$/);
    expect(Date.parse(route.keys[0].resting_until) - Date.now()).toBeWithin(50_000, 61_000);
    const pub = await (await fetch(`${gw.url}/status`)).text();
    for (const k of KEYS) expect(pub).not.toContain(k);
    expect(JSON.parse(pub).models.find((m: { id: string }) => m.id === "kstatus")).toEqual({ id: "kstatus", state: "degraded" });
  });
});
