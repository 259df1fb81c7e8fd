import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { goDuration, RateLimiter } from "../../src/limits/rate-limit.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { getWithKey, postWithApiKey } from "../support/keyed.ts";

// Issue 13: every answer of a key route carries OpenAI's x-ratelimit-*-requests headers for the bucket
// the route used (clients and agent tools read them); 429 keeps its Retry-After.

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(() => gw.stop());

const chat = { model: "demo", max_tokens: 20, messages: [{ role: "user", content: "hi" }] };
const rateHeaders = (res: Response) => ({
  limit: res.headers.get("x-ratelimit-limit-requests"),
  remaining: res.headers.get("x-ratelimit-remaining-requests"),
  reset: res.headers.get("x-ratelimit-reset-requests"),
});
// Go's time.Duration text, as OpenAI sends it: "20ms", "3s", "1m0s", "2m59.56s".
const GO_DURATION = /^(\d+h)?(\d+m)?(\d+(\.\d+)?s|\d+ms)$/;

describe("x-ratelimit-* headers on key routes", () => {
  it("are on a successful answer: the key's limit, what is left, and the time until the bucket is full", async () => {
    const a = await gw.account(1);
    const res = await postWithApiKey(gw, "/v1/chat/completions", chat, a.key);
    expect(res.status).toBe(200);
    const h = rateHeaders(res);
    expect(h).toMatchObject({ limit: "20", remaining: "19" });
    expect(h.reset).toMatch(GO_DURATION);
    // One request of 20/min takes 3 s to come back.
    expect(h.reset).toMatch(/^(2\.\d+|3)s$/);
  });

  it("count down with each request", async () => {
    const a = await gw.account(1);
    for (let i = 0; i < 3; i++) await (await getWithKey(gw, "/v1/me", a.key)).text();
    expect(rateHeaders(await getWithKey(gw, "/v1/me", a.key)).remaining).toBe("16");
  });

  it("are on an error answer after the key is known", async () => {
    const poor = await gw.account(0);
    const res = await postWithApiKey(gw, "/v1/chat/completions", chat, poor.key);
    expect(res.status).toBe(402);
    expect(rateHeaders(res)).toMatchObject({ limit: "20", remaining: "19" });
  });

  it("say 0 remaining on a 429, next to Retry-After", async () => {
    const a = await gw.account(1, { rpm: 2 });
    await (await getWithKey(gw, "/v1/me", a.key)).text();
    await (await getWithKey(gw, "/v1/me", a.key)).text();
    const res = await getWithKey(gw, "/v1/me", a.key);
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("30");
    const h = rateHeaders(res);
    expect(h).toMatchObject({ limit: "2", remaining: "0" });
    expect(h.reset).toMatch(/^(59\.\d+|1m0)s$/);
  });

  it("follow the key's own rpm", async () => {
    const a = await gw.account(1, { rpm: 7 });
    expect(rateHeaders(await getWithKey(gw, "/v1/me", a.key))).toMatchObject({ limit: "7", remaining: "6" });
  });

  it("describe count_tokens' own bucket on count_tokens", async () => {
    const a = await gw.account(1);
    await (await getWithKey(gw, "/v1/me", a.key)).text();
    const res = await postWithApiKey(gw, "/v1/messages/count_tokens", { model: "demo", messages: [{ role: "user", content: "hi" }] }, a.key);
    expect(res.status).toBe(200);
    expect(rateHeaders(res)).toMatchObject({ limit: "60", remaining: "59" });
  });

  it("are on a replayed idempotent answer", async () => {
    const a = await gw.account(1);
    const headers = { "idempotency-key": "rl-replay-1" };
    await (await postWithApiKey(gw, "/v1/chat/completions", chat, a.key, headers)).text();
    const replay = await postWithApiKey(gw, "/v1/chat/completions", chat, a.key, headers);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(rateHeaders(replay)).toMatchObject({ limit: "20", remaining: "18" });
  });
});

describe("goDuration (OpenAI's reset format)", () => {
  it("writes Go duration text, rounded up to the millisecond", () => {
    expect([0, 0.2, 20, 999.1, 1000, 1500, 2999.5, 60_000, 179_560, 3_600_000 + 61_000].map(goDuration)).toEqual([
      "0s",
      "1ms",
      "20ms",
      "1s",
      "1s",
      "1.5s",
      "3s",
      "1m0s",
      "2m59.56s",
      "1h1m1s",
    ]);
  });
});

describe("RateLimiter.withHeaders", () => {
  it("reports the bucket as it stands when the answer leaves, refill included", () => {
    let t = 0;
    const limiter = new RateLimiter(() => t);
    const b = limiter.take("k", 60, "this key");
    limiter.take("k", 60, "this key");
    const h = () => Object.fromEntries(limiter.withHeaders(new Headers(), b));
    expect(h()).toEqual({ "x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "58", "x-ratelimit-reset-requests": "2s" });
    t = 1500;
    expect(h()).toEqual({ "x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "59", "x-ratelimit-reset-requests": "500ms" });
  });
});
