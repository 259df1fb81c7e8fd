import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { GatewayError } from "../../src/core/errors.ts";
import { RedisRateLimiter } from "../../src/limits/redis-rate-limit.ts";
import { events } from "../../src/core/events.ts";
import { startTestRedis, type TestRedis } from "../support/redis-server.ts";

// The Redis limiter on its own: whatever the store answers that is not a bucket's answer is a 503,
// never a request let through uncounted.

let redis: TestRedis;
const lines: { event?: string }[] = [];
let restoreEvents = () => {};
beforeAll(async () => {
  redis = await startTestRedis();
  restoreEvents = events.redirect((line) => lines.push(JSON.parse(line) as { event?: string }));
});
afterAll(async () => {
  restoreEvents();
  await redis?.stop();
});

/** A server that speaks just enough RESP3 to be connected to, then answers every command `reply`. */
function oddStore(reply: string) {
  return Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: { data: (s, d) => void s.write(d.toString().includes("HELLO") ? "%1\r\n+server\r\n+redis\r\n" : reply) },
  });
}

describe("RedisRateLimiter", () => {
  it("takes from a bucket that several limiters share, as two instances would", async () => {
    const [one, two] = [new RedisRateLimiter(redis.url, { prefix: "t1:" }), new RedisRateLimiter(redis.url, { prefix: "t1:" })];
    expect((await one.take("k:main", 2, "this key")).units).toBe(60_000);
    // The milliseconds between the takes refill 2 units each, of the 60 000 a request costs.
    expect((await two.take("k:main", 2, "this key")).units).toBeLessThan(1_000);
    await expect(one.take("k:main", 2, "this key")).rejects.toMatchObject({ status: 429, code: "rate_limit", retryAfter: 30 });
    one.close();
    two.close();
  });

  it("takes from a key's bucket and its account's together, or from neither", async () => {
    const limiter = new RedisRateLimiter(redis.url, { prefix: "t6:" });
    const takes = (keyId: number) => [
      { id: `${keyId}:main`, rpm: 20, what: "this key" },
      { id: "acct:1", rpm: 2, what: "all the keys of this account together" },
    ];
    // The answer's bucket is the tighter one: the account's, at 2 a minute.
    expect(await limiter.takeAll(takes(1))).toMatchObject({ rpm: 2, units: 60_000 });
    await limiter.takeAll(takes(2));
    await expect(limiter.takeAll(takes(3))).rejects.toMatchObject({ status: 429, code: "rate_limit", retryAfter: 30, message: expect.stringContaining("this account") });
    // The refused request took nothing from key 3's bucket: it is still full (no field written, or all 20).
    const units = Number((await redis.send("HGET", "t6:3:main", "units")) ?? 20 * 60_000);
    expect(units).toBeGreaterThanOrEqual(20 * 60_000);
    limiter.close();
  });

  it("answers 503 rate_limit_unavailable when a key of another type is in the bucket's place", async () => {
    await redis.send("SET", "t2:k:main", "not a bucket");
    const limiter = new RedisRateLimiter(redis.url, { prefix: "t2:" });
    await expect(limiter.take("k:main", 20, "this key")).rejects.toMatchObject({ status: 503, code: "rate_limit_unavailable", retryAfter: 1 });
    limiter.close();
  });

  it("answers 503 rate_limit_unavailable when the store's reply is not the script's [refused, units of each bucket]", async () => {
    const store = oddStore(":1\r\n");
    const limiter = new RedisRateLimiter(`redis://127.0.0.1:${store.port}`);
    const taken = limiter.take("k:main", 20, "this key");
    await expect(taken).rejects.toBeInstanceOf(GatewayError);
    await expect(taken).rejects.toMatchObject({ status: 503, code: "rate_limit_unavailable", type: "rate_limit" });
    limiter.close();
    store.stop(true);
  });

  it("answers 503 rate_limit_unavailable when nothing listens at the store's address", async () => {
    const limiter = new RedisRateLimiter("redis://127.0.0.1:1");
    await expect(limiter.take("k:main", 20, "this key")).rejects.toMatchObject({ status: 503, code: "rate_limit_unavailable" });
    limiter.close();
  });

  it("writes one rate_limit_store_failed event per failed take", () => {
    expect(lines.map((l) => l.event)).toEqual(Array(3).fill("rate_limit_store_failed"));
  });
});
