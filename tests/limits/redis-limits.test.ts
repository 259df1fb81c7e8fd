import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { getWithKey, postWithApiKey } from "../support/keyed.ts";
import { expectError } from "../support/errors.ts";
import { startTestRedis, type TestRedis } from "../support/redis-server.ts";

// Issue 18: with `[limits] store = "redis://…"` the per-key token buckets live in Redis, with the
// same answers as the in-process ones: 20 a minute, count_tokens 60 on its own bucket, 429 with an
// integer Retry-After and OpenAI's x-ratelimit-* headers.

let redis: TestRedis;
let gw: TestGateway;
beforeAll(async () => {
  redis = await startTestRedis();
  gw = await startTestGateway({ limits: { store: redis.url } });
});
afterAll(async () => {
  await gw?.stop();
  await redis?.stop();
});

const chat = { model: "demo", max_tokens: 20, messages: [{ role: "user", content: "hi" }] };
const countBody = { model: "demo", messages: [{ role: "user", content: "hi" }] };
const rateHeaders = (res: Response) => ({
  limit: res.headers.get("x-ratelimit-limit-requests"),
  remaining: res.headers.get("x-ratelimit-remaining-requests"),
});
const drain = async (res: Promise<Response>) => (await res).text();

describe("rate limits in Redis", () => {
  it("serves 20 requests of a key in a minute and refuses the 21st with 429 rate_limit and an integer Retry-After", async () => {
    const a = await gw.account(1);
    const first = await postWithApiKey(gw, "/v1/chat/completions", chat, a.key);
    expect(first.status).toBe(200);
    expect(rateHeaders(first)).toEqual({ limit: "20", remaining: "19" });
    for (let i = 2; i <= 20; i++) expect((await getWithKey(gw, "/v1/me", a.key)).status).toBe(200);
    const res = await postWithApiKey(gw, "/v1/chat/completions", chat, a.key);
    expect(res.headers.get("retry-after")).toMatch(/^[1-3]$/);
    expect(rateHeaders(res)).toEqual({ limit: "20", remaining: "0" });
    expect(res.headers.get("x-ratelimit-reset-requests")).toMatch(/^(59\.\d+|1m0)s$/);
    await expectError(res, 429, "rate_limit");
  });

  it("counts down in the x-ratelimit headers with each request", async () => {
    const a = await gw.account(1);
    for (let i = 0; i < 3; i++) await drain(getWithKey(gw, "/v1/me", a.key));
    expect(rateHeaders(await getWithKey(gw, "/v1/me", a.key))).toEqual({ limit: "20", remaining: "16" });
  });

  it("follows the key's own rpm", async () => {
    const a = await gw.account(1, { rpm: 2 });
    await drain(getWithKey(gw, "/v1/me", a.key));
    await drain(getWithKey(gw, "/v1/me", a.key));
    const res = await getWithKey(gw, "/v1/me", a.key);
    expect(res.headers.get("retry-after")).toBe("30");
    await expectError(res, 429, "rate_limit");
  });

  it("keeps count_tokens on its own bucket of 60 a minute, untouched by the main one", async () => {
    const a = await gw.account(1);
    for (let i = 0; i < 20; i++) await drain(getWithKey(gw, "/v1/me", a.key));
    expect((await getWithKey(gw, "/v1/me", a.key)).status).toBe(429);
    for (let i = 1; i <= 60; i++) {
      const res = await postWithApiKey(gw, "/v1/messages/count_tokens", countBody, a.key);
      expect(res.status).toBe(200);
      expect(rateHeaders(res)).toEqual({ limit: "60", remaining: String(60 - i) });
    }
    const res = await postWithApiKey(gw, "/v1/messages/count_tokens", countBody, a.key);
    expect(res.headers.get("retry-after")).toBe("1");
    await expectError(res, 429, "rate_limit");
  });

  it("names its keys gateway:rl:<key id>:main and :ct, and lets them expire within a minute", async () => {
    const a = await gw.account(1);
    await drain(getWithKey(gw, "/v1/me", a.key));
    await drain(postWithApiKey(gw, "/v1/messages/count_tokens", countBody, a.key));
    for (const name of ["main", "ct"]) {
      const ttl = (await redis.send("PTTL", `gateway:rl:${a.keyId}:${name}`)) as number;
      expect(ttl).toBeGreaterThan(55_000);
      expect(ttl).toBeLessThanOrEqual(60_000);
    }
  });

  it("keeps whole units in the bucket: 60 000 a request, on Redis's millisecond clock", async () => {
    const a = await gw.account(1);
    await drain(getWithKey(gw, "/v1/me", a.key));
    const [units, at] = (await redis.send("HMGET", `gateway:rl:${a.keyId}:main`, "units", "at")) as string[];
    expect(Number(units)).toBe(19 * 60_000);
    const [seconds] = (await redis.send("TIME")) as string[];
    expect(Math.abs(Number(at) - Number(seconds) * 1000)).toBeLessThan(5_000);
  });

  it("loads its script again when Redis has forgotten it (NOSCRIPT), and goes on counting", async () => {
    const a = await gw.account(1);
    await drain(getWithKey(gw, "/v1/me", a.key));
    expect(await redis.send("SCRIPT", "FLUSH")).toBe("OK");
    const res = await getWithKey(gw, "/v1/me", a.key);
    expect(res.status).toBe(200);
    expect(rateHeaders(res)).toEqual({ limit: "20", remaining: "18" });
  });
});
