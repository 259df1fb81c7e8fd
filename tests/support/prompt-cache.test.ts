import { describe, expect, it } from "bun:test";
import { LOOKBACK, MIN_CACHEABLE, PromptCacheModel } from "./prompt-cache.ts";

// The cache-accounting mock behaves as Anthropic documents its prompt cache.

const EPH = { type: "ephemeral" };
/** A text block of `tokens` tokens (4 bytes of its JSON each), marked as a breakpoint when `cache`. */
const text = (tokens: number, tag: string, cache = false) => {
  const overhead = JSON.stringify({ type: "text", text: tag }).length;
  return { type: "text", text: tag + "x".repeat(tokens * 4 - overhead), ...(cache ? { cache_control: EPH } : {}) };
};
const body = (...content: object[]) => ({ model: "m", messages: [{ role: "user", content }] });

describe("PromptCacheModel", () => {
  it("writes the prefix up to a breakpoint, then reads it back", () => {
    const cache = new PromptCacheModel();
    const b = body(text(2000, "a", true), text(100, "q"));
    expect(cache.usageOf(b)).toEqual({ input: 100, cacheRead: 0, cacheWrite: 2000, cacheWrite1h: 0 });
    expect(cache.usageOf(b)).toEqual({ input: 100, cacheRead: 2000, cacheWrite: 0, cacheWrite1h: 0 });
  });

  it("a grown conversation reads the earlier breakpoint's prefix found within the look-back, and writes the rest", () => {
    const cache = new PromptCacheModel();
    cache.usageOf(body(text(2000, "a", true)));
    const grown = [text(2000, "a"), ...Array.from({ length: LOOKBACK - 2 }, (_, i) => text(10, `t${i}`)), text(10, "end", true)];
    expect(cache.usageOf(body(...grown))).toEqual({ input: 0, cacheRead: 2000, cacheWrite: (LOOKBACK - 1) * 10, cacheWrite1h: 0 });
  });

  it("a prefix shorter than the minimum is never cached", () => {
    const cache = new PromptCacheModel();
    const b = body(text(MIN_CACHEABLE - 10, "a", true));
    cache.usageOf(b);
    expect(cache.usageOf(b)).toEqual({ input: MIN_CACHEABLE - 10, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0 });
  });

  it("an entry expires after its ttl", () => {
    let now = 0;
    const cache = new PromptCacheModel(() => now);
    const b = body(text(2000, "a", true));
    cache.usageOf(b);
    now += 5 * 60_000 + 1;
    expect(cache.usageOf(b).cacheRead).toBe(0);
  });
});
