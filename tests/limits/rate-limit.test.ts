import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { GatewayError } from "../../src/core/errors.ts";
import { RateLimiter } from "../../src/limits/rate-limit.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { getWithKey, postWithApiKey } from "../support/keyed.ts";
import { errorOf } from "../support/errors.ts";

/** A limiter on a hand-driven clock (milliseconds). */
function clocked() {
  let t = 1_000_000;
  const limiter = new RateLimiter(() => t);
  return {
    limiter,
    advance: (ms: number) => (t += ms),
    /** null when allowed, else the Retry-After seconds. */
    take: (id: string, rpm: number): number | null => {
      try {
        limiter.take(id, rpm, "this key");
        return null;
      } catch (e) {
        expect(e).toBeInstanceOf(GatewayError);
        expect((e as GatewayError).code).toBe("rate_limit");
        return (e as GatewayError).retryAfter!;
      }
    },
  };
}

describe("RateLimiter (token bucket per key)", () => {
  it("allows a burst of rpm requests, then refuses the next", () => {
    const c = clocked();
    for (let i = 0; i < 20; i++) expect(c.take("k", 20)).toBeNull();
    expect(c.take("k", 20)).not.toBeNull();
  });

  it("gives Retry-After as the whole seconds until the next token: 3 s at 20/min, 60 s at 1/min, 1 s at 120/min", () => {
    for (const [rpm, wait] of [
      [20, 3],
      [1, 60],
      [120, 1],
      [7, 9],
    ] as const) {
      const c = clocked();
      for (let i = 0; i < rpm; i++) c.take("k", rpm);
      const retryAfter = c.take("k", rpm)!;
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBe(wait);
    }
  });

  it("refills continuously: one request per 3 s at 20/min", () => {
    const c = clocked();
    for (let i = 0; i < 20; i++) c.take("k", 20);
    c.advance(2_999);
    expect(c.take("k", 20)).toBe(1);
    c.advance(1);
    expect(c.take("k", 20)).toBeNull();
    expect(c.take("k", 20)).not.toBeNull();
  });

  it("never holds more than rpm tokens after a long idle time", () => {
    const c = clocked();
    c.take("k", 5);
    c.advance(3_600_000);
    for (let i = 0; i < 5; i++) expect(c.take("k", 5)).toBeNull();
    expect(c.take("k", 5)).not.toBeNull();
  });

  it("keeps separate buckets per id", () => {
    const c = clocked();
    for (let i = 0; i < 3; i++) c.take("a", 3);
    expect(c.take("a", 3)).not.toBeNull();
    expect(c.take("b", 3)).toBeNull();
  });

  it("says in the message what was limited and for how long", () => {
    const limiter = new RateLimiter(() => 0);
    limiter.take("k", 1, "count_tokens on this key");
    expect(() => limiter.take("k", 1, "count_tokens on this key")).toThrow(/1 request per minute for count_tokens on this key\. Retry after 60 seconds/);
  });

  it("writes one request and one second in the singular", () => {
    // 60 a minute refills one a second: the usual count_tokens refusal.
    const limiter = new RateLimiter(() => 0);
    for (let i = 0; i < 60; i++) limiter.take("k", 60, "count_tokens on this key");
    expect(() => limiter.take("k", 60, "count_tokens on this key")).toThrow("Rate limit exceeded: 60 requests per minute for count_tokens on this key. Retry after 1 second.");
  });

  it("forgets buckets idle for over a minute, so memory follows the keys in use, not every key ever seen", () => {
    const c = clocked();
    for (let i = 0; i < 1000; i++) c.take(`old${i}`, 20);
    expect(c.limiter.size).toBe(1000);
    c.advance(61_000);
    c.take("new", 20);
    expect(c.limiter.size).toBe(1);
  });

  it("keeps memory bounded while keys come and go for hours", () => {
    const c = clocked();
    let peak = 0;
    for (let minute = 0; minute < 180; minute++) {
      for (let i = 0; i < 50; i++) c.take(`m${minute}-k${i}`, 20);
      c.advance(60_000);
      peak = Math.max(peak, c.limiter.size);
    }
    expect(peak).toBeLessThanOrEqual(150);
  });

  it("treats a forgotten bucket like a full one: the key gets its whole burst back", () => {
    const c = clocked();
    for (let i = 0; i < 20; i++) c.take("k", 20);
    c.advance(61_000);
    c.take("other", 20); // sweeps "k"
    for (let i = 0; i < 20; i++) expect(c.take("k", 20)).toBeNull();
    expect(c.take("k", 20)).not.toBeNull();
  });
});

describe("RateLimiter.takeAll (a key's bucket and its account's)", () => {
  const key = (rpm: number) => ({ id: "k", rpm, what: "this key" });
  const account = (rpm: number) => ({ id: "acct:1", rpm, what: "all the keys of this account together" });
  const refusalOf = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      return e as GatewayError;
    }
    throw new Error("not refused");
  };

  it("refuses when either bucket is empty, naming the one that refused", () => {
    const limiter = new RateLimiter(() => 0);
    for (let i = 0; i < 2; i++) limiter.takeAll([key(20), account(2)]);
    const e = refusalOf(() => limiter.takeAll([key(20), account(2)]));
    expect(e).toMatchObject({ code: "rate_limit", retryAfter: 30 });
    expect(e.message).toContain("2 requests per minute for all the keys of this account together");
  });

  it("takes a single bucket (no account_rpm) exactly as take does: same bucket, same refusal", () => {
    const all = new RateLimiter(() => 0);
    const one = new RateLimiter(() => 0);
    for (let i = 0; i < 2; i++) expect(all.takeAll([key(2)]).units).toBe(one.take("k", 2, "this key").units);
    const a = refusalOf(() => all.takeAll([key(2)]));
    const b = refusalOf(() => one.take("k", 2, "this key"));
    expect([a.message, a.retryAfter]).toEqual([b.message, b.retryAfter]);
  });

  it("spends nothing of the key's bucket on a request the account's refuses", () => {
    const limiter = new RateLimiter(() => 0);
    limiter.takeAll([key(3), account(1)]);
    for (let i = 0; i < 5; i++) refusalOf(() => limiter.takeAll([key(3), account(1)]));
    // The key's bucket lost only the one request that went through: two are left.
    expect(limiter.take("k", 3, "this key").units).toBe(60_000);
  });

  it("answers with the Retry-After of the bucket that refills last when both are empty", () => {
    const limiter = new RateLimiter(() => 0);
    limiter.takeAll([key(1), account(6)]);
    expect(refusalOf(() => limiter.takeAll([key(1), account(1)])).retryAfter).toBe(60);
  });

  it("returns the tighter bucket for the answer's headers: fewer requests left, then the lower limit", () => {
    const limiter = new RateLimiter(() => 0);
    expect(limiter.takeAll([key(20), account(5)]).rpm).toBe(5);
    expect(limiter.takeAll([{ id: "k2", rpm: 2, what: "this key" }, account(5)]).rpm).toBe(2);
    expect(limiter.takeAll([{ id: "k3", rpm: 4, what: "this key" }, { id: "acct:2", rpm: 4, what: "" }]).rpm).toBe(4);
  });
});

describe("rate limits on a running gateway (defaults: 20/min, count_tokens 60/min)", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(() => gw.stop());

  const count = (key: string) => postWithApiKey(gw, "/v1/messages/count_tokens", { model: "demo", messages: [{ role: "user", content: "hi" }] }, key);
  const me = (key: string) => getWithKey(gw, "/v1/me", key);
  const statuses = async (n: number, call: () => Promise<Response>) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      const res = await call();
      await res.arrayBuffer();
      out.push(res.status);
    }
    return out;
  };

  it("refuses the 21st request in a minute with 429 rate_limit and an integer Retry-After between 1 and 60", async () => {
    const a = await gw.account(1);
    expect(await statuses(20, () => me(a.key))).toEqual(Array(20).fill(200));
    const res = await me(a.key);
    expect(res.status).toBe(429);
    expect(await errorOf(res)).toMatchObject({ type: "rate_limit", code: "rate_limit" });
    const retryAfter = res.headers.get("retry-after")!;
    expect(retryAfter).toMatch(/^\d+$/);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(retryAfter)).toBeLessThanOrEqual(60);
    expect(res.headers.get("x-should-retry")).toBeNull();
  });

  it("counts every key route against the same main bucket", async () => {
    const a = await gw.account(1);
    const chat = () => postWithApiKey(gw, "/v1/chat/completions", { model: "demo", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }, a.key);
    await statuses(10, chat);
    await statuses(10, () => me(a.key));
    expect((await chat()).status).toBe(429);
  });

  it("limits each key on its own, even within one account", async () => {
    const a = await gw.account(1);
    const b = await gw.key(a.accountId);
    await statuses(20, () => me(a.key));
    expect((await me(a.key)).status).toBe(429);
    expect((await me(b.key)).status).toBe(200);
  });

  it("keeps count_tokens available when the main bucket is empty", async () => {
    const a = await gw.account(1);
    await statuses(21, () => me(a.key));
    expect((await count(a.key)).status).toBe(200);
  });

  it("gives count_tokens its own 60/min, without touching the main bucket", async () => {
    const a = await gw.account(1);
    expect(await statuses(60, () => count(a.key))).toEqual(Array(60).fill(200));
    const res = await count(a.key);
    expect(res.status).toBe(429);
    expect((await errorOf(res)).message).toContain("60 requests per minute for count_tokens");
    expect(Number(res.headers.get("retry-after"))).toBe(1);
    expect(await statuses(20, () => me(a.key))).toEqual(Array(20).fill(200));
  });

  it("honours a key's own rpm instead of the default", async () => {
    const slow = await gw.account(1, { rpm: 3 });
    expect(await statuses(4, () => me(slow.key))).toEqual([200, 200, 200, 429]);
    const res = await me(slow.key);
    expect(res.headers.get("retry-after")).toBe("20");
    const fast = await gw.account(1, { rpm: 50 });
    expect(await statuses(50, () => me(fast.key))).toEqual(Array(50).fill(200));
  });

  it("does not rate-limit requests that carry no valid key (they stop at 401)", async () => {
    expect(await statuses(25, () => me("gk_sk_unknown"))).toEqual(Array(25).fill(401));
  });
});

describe("configured limits", () => {
  it("apply limits.default_rpm and limits.count_tokens_rpm from the config", async () => {
    const gw = await startTestGateway({ limits: { default_rpm: 2, count_tokens_rpm: 1 } });
    try {
      const a = await gw.account(1);
      const codes: number[] = [];
      for (let i = 0; i < 3; i++) codes.push((await getWithKey(gw, "/v1/me", a.key)).status);
      for (let i = 0; i < 2; i++) codes.push((await postWithApiKey(gw, "/v1/messages/count_tokens", { model: "demo", messages: [] }, a.key)).status);
      expect(codes).toEqual([200, 200, 429, 200, 429]);
    } finally {
      await gw.stop();
    }
  });
});
