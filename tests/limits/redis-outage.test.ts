import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "bun:test";
import { events } from "../../src/core/events.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { balanceGuard, send } from "../support/http.ts";
import { getWithKey, postWithApiKey, sqlGet } from "../support/keyed.ts";
import { expectError } from "../support/errors.ts";
import { startTestRedis, type TestRedis } from "../support/redis-server.ts";

// Issue 18: a Redis outage answers 503 with the standard error, never unlimited traffic; nothing is
// charged; the operator gets an event line; the gateway recovers by itself when Redis is back.

let redis: TestRedis;
let gw: TestGateway;
let lines: Record<string, unknown>[] = [];
let restoreEvents = () => {};
beforeAll(async () => {
  redis = await startTestRedis();
  gw = await startTestGateway({ limits: { store: redis.url } });
});
beforeEach(() => {
  // Fresh windows per test: the event log writes at most 20 lines of a kind per 10 s.
  lines = [];
  restoreEvents = events.redirect((line) => lines.push(JSON.parse(line) as Record<string, unknown>));
});
afterEach(async () => {
  restoreEvents();
  redis.resume();
  await redis.start();
});
afterAll(async () => {
  await gw?.stop();
  await redis?.stop();
});

const chat = { model: "demo", max_tokens: 20, messages: [{ role: "user", content: "hi" }] };

describe("a Redis outage", () => {
  it("answers 503 rate_limit_unavailable with the standard error, its request id and Retry-After, and charges nothing", async () => {
    const a = await gw.account(1);
    expect((await postWithApiKey(gw, "/v1/chat/completions", chat, a.key)).status).toBe(200);
    const untouched = balanceGuard(gw, a.accountId);
    await redis.stop();
    const res = await postWithApiKey(gw, "/v1/chat/completions", chat, a.key);
    expect(res.headers.get("retry-after")).toBe("1");
    expect(res.headers.get("x-ratelimit-limit-requests")).toBeNull();
    const err = await expectError(res, 503, "rate_limit_unavailable", "rate_limit");
    untouched();
    const row = sqlGet<{ status: number; error_code: string }>(gw, "SELECT status, error_code FROM request_logs WHERE request_id = ?", err.request_id);
    expect(row).toEqual({ status: 503, error_code: "rate_limit_unavailable" });
  });

  it("makes GET /readyz answer 503 while it lasts, and 200 once the store is back", async () => {
    expect((await send(gw, "/readyz")).status).toBe(200);
    await redis.stop();
    expect((await send(gw, "/readyz")).status).toBe(503);
    await redis.start();
    expect((await send(gw, "/readyz")).status).toBe(200);
  });

  it("lets no request through while it lasts, on any key route", async () => {
    const a = await gw.account(1);
    await redis.stop();
    for (let i = 0; i < 30; i++) expect((await getWithKey(gw, "/v1/me", a.key)).status).toBe(503);
    const counted = await postWithApiKey(gw, "/v1/messages/count_tokens", { model: "demo", messages: [{ role: "user", content: "hi" }] }, a.key);
    await expectError(counted, 503, "rate_limit_unavailable", "rate_limit");
  });

  it("writes a rate_limit_store_failed event line for the operator, without the store's URL", async () => {
    const a = await gw.account(1);
    await redis.stop();
    await (await getWithKey(gw, "/v1/me", a.key)).text();
    const line = lines.find((l) => l.event === "rate_limit_store_failed");
    expect(line).toMatchObject({ level: "error", reason: expect.any(String) });
    expect(JSON.stringify(lines)).not.toContain(`127.0.0.1:${redis.port}`);
  });

  it("answers 503 within about the timeout when Redis is connected but does not answer", async () => {
    const a = await gw.account(1);
    await (await getWithKey(gw, "/v1/me", a.key)).text();
    redis.pause();
    const started = performance.now();
    const res = await getWithKey(gw, "/v1/me", a.key);
    const took = performance.now() - started;
    await expectError(res, 503, "rate_limit_unavailable", "rate_limit");
    expect(took).toBeGreaterThanOrEqual(240);
    expect(took).toBeLessThan(2_000);
  });

  it("serves again by itself once Redis is back, with the buckets it then keeps", async () => {
    const a = await gw.account(1);
    await redis.stop();
    expect((await getWithKey(gw, "/v1/me", a.key)).status).toBe(503);
    await redis.start();
    const res = await postWithApiKey(gw, "/v1/chat/completions", chat, a.key);
    expect(res.status).toBe(200);
    // A Redis restarted empty forgot the script and the buckets: loaded again, counted afresh.
    expect(res.headers.get("x-ratelimit-remaining-requests")).toBe("19");
  });
});
