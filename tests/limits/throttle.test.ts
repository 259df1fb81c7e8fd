import { describe, expect, it } from "bun:test";
import { GatewayError } from "../../src/core/errors.ts";
import { Throttle } from "../../src/limits/throttle.ts";

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
    const t = new Throttle(3, 60_000, () => 0);
    for (let i = 0; i < 3; i++) {
      t.check("a", "logins");
      t.hit("a");
    }
    const e = refusal(() => t.check("a", "logins"));
    expect([e.status, e.code, e.message]).toEqual([429, "rate_limit", "Too many logins. Retry after 60 seconds."]);
  });

  it("says in Retry-After when the oldest attempt leaves the window", () => {
    let now = 0;
    const t = new Throttle(2, 60_000, () => now);
    t.hit("a");
    now = 20_000;
    t.hit("a");
    now = 30_500;
    expect(refusal(() => t.check("a", "x")).retryAfter).toBe(30);
    now = 60_000;
    expect(() => t.check("a", "x")).not.toThrow();
  });

  it("counts each key on its own", () => {
    const t = new Throttle(1, 60_000, () => 0);
    t.hit("a");
    expect(() => t.check("b", "x")).not.toThrow();
  });

  it("forgets a key that is cleared", () => {
    const t = new Throttle(1, 60_000, () => 0);
    t.hit("a");
    t.clear("a");
    expect(() => t.check("a", "x")).not.toThrow();
  });

  it("drops keys whose attempts left the window, so made-up keys cannot grow it", () => {
    let now = 0;
    const t = new Throttle(5, 1000, () => now);
    for (let i = 0; i < 100; i++) t.hit(`k${i}`);
    now = 5000;
    t.check("other", "x");
    expect(t.size).toBe(0);
  });
});
