import { describe, expect, it } from "bun:test";
import { GatewayError } from "../../src/core/errors.ts";
import { MemoryThrottle } from "../../src/limits/throttle.ts";

function refusal(fn: () => void): GatewayError {
  try {
    fn();
  } catch (e) {
    return e as GatewayError;
  }
  throw new Error("not refused");
}

describe("the login throttle", () => {
  it("lets `limit` attempts through in a window, then refuses with 429 rate_limit", () => {
    const t = new MemoryThrottle(3, 60_000, () => 0);
    for (let i = 0; i < 3; i++) t.take("a", "logins");
    const e = refusal(() => t.take("a", "logins"));
    expect([e.status, e.code, e.message]).toEqual([429, "rate_limit", "Too many logins. Retry after 60 seconds."]);
  });

  it("counts nothing when it refuses", () => {
    let now = 0;
    const t = new MemoryThrottle(1, 60_000, () => now);
    t.take("a", "x");
    now = 30_000;
    refusal(() => t.take("a", "x"));
    now = 60_000;
    expect(() => t.take("a", "x")).not.toThrow();
  });

  it("says in Retry-After when the oldest attempt leaves the window", () => {
    let now = 0;
    const t = new MemoryThrottle(2, 60_000, () => now);
    t.take("a", "x");
    now = 20_000;
    t.take("a", "x");
    now = 30_500;
    expect(refusal(() => t.take("a", "x")).retryAfter).toBe(30);
    now = 60_000;
    expect(() => t.take("a", "x")).not.toThrow();
  });

  it("counts each key on its own", () => {
    const t = new MemoryThrottle(1, 60_000, () => 0);
    t.take("a", "x");
    expect(() => t.take("b", "x")).not.toThrow();
  });

  it("forgets a key that is cleared", () => {
    const t = new MemoryThrottle(1, 60_000, () => 0);
    t.take("a", "x");
    t.clear("a");
    expect(() => t.take("a", "x")).not.toThrow();
  });

  it("gives back one refunded attempt and keeps the others", () => {
    const t = new MemoryThrottle(2, 60_000, () => 0);
    t.take("a", "x");
    const second = t.take("a", "x");
    t.refund(second);
    t.take("a", "x");
    expect(() => t.take("a", "x")).toThrow(GatewayError);
  });

  it("drops keys whose attempts left the window, so made-up keys cannot grow it", () => {
    let now = 0;
    const t = new MemoryThrottle(5, 1000, () => now);
    for (let i = 0; i < 100; i++) t.take(`k${i}`, "x");
    now = 5000;
    t.take("other", "x");
    expect(t.size).toBe(1);
  });
});
