import { describe, expect, it } from "bun:test";
import { formatUsd, nanoToUsd, tokenCost, usdToNano, type TokenPrices } from "../../src/core/money.ts";

// Prices are nano-dollars per 1M tokens, so a price of P USD/M costs P × 1000 nano-dollars a token.
const prices = (usd: { input?: number; output?: number; cacheRead?: number; cacheWrite?: number }): TokenPrices => ({
  input: usdToNano(usd.input ?? 0),
  output: usdToNano(usd.output ?? 0),
  cacheRead: usdToNano(usd.cacheRead ?? 0),
  cacheWrite: usdToNano(usd.cacheWrite ?? 0),
});
const none = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };

describe("usdToNano", () => {
  it("converts whole and decimal dollars exactly", () => {
    expect(usdToNano(1)).toBe(1_000_000_000);
    expect(usdToNano(0)).toBe(0);
    expect(usdToNano("12")).toBe(12_000_000_000);
    expect(usdToNano("1.")).toBe(1_000_000_000);
  });

  it("keeps catalog prices like 0.075 and 3.75 exact", () => {
    expect(usdToNano(0.075)).toBe(75_000_000);
    expect(usdToNano(3.75)).toBe(3_750_000_000);
    expect(usdToNano(0.0075)).toBe(7_500_000);
    expect(usdToNano(0.3)).toBe(300_000_000);
    expect(usdToNano("0.075")).toBe(75_000_000);
  });

  it("refuses a number whose shortest decimal has more than 9 decimals instead of rounding it (0.1 + 0.2)", () => {
    // 0.1 + 0.2 is 0.30000000000000004: crediting 0.3 would not be the amount that was sent.
    expect(() => usdToNano(0.1 + 0.2)).toThrow("0.30000000000000004 has 17 decimals, finer than the ledger's unit of 1 nano-dollar");
    expect(() => usdToNano(0.1 + 0.7)).toThrow(RangeError);
    expect(() => usdToNano("0.30000000000000004")).toThrow("has 17 decimals");
  });

  it("reads a number by its shortest decimal, so 0.1 and 1.1 are exact though no double is", () => {
    expect(usdToNano(0.1)).toBe(100_000_000);
    expect(usdToNano(1.1)).toBe(1_100_000_000);
    expect(usdToNano(123456.123456789)).toBe(123_456_123_456_789);
  });

  it("writes out an exponent form before counting decimals: 1e-7 and 1.5e-8 are taken, 1e-10 is refused", () => {
    expect(usdToNano(1e-7)).toBe(100);
    expect(usdToNano(1.5e-8)).toBe(15);
    expect(() => usdToNano(1e-10)).toThrow("0.0000000001 has 10 decimals");
    expect(() => usdToNano(1.5e-10)).toThrow("0.00000000015 has 11 decimals");
    expect(() => usdToNano(1e21)).toThrow(/too large/);
  });

  it("takes trailing zeros past the ninth decimal, which change nothing", () => {
    expect(usdToNano("1.500000000000")).toBe(1_500_000_000);
  });

  it("accepts one nano-dollar, the smallest amount", () => {
    expect(usdToNano("0.000000001")).toBe(1);
    expect(usdToNano(1e-9)).toBe(1);
  });

  it("refuses more than 9 decimals, negative, non-numeric and non-finite amounts", () => {
    expect(() => usdToNano("1.0000000001")).toThrow(RangeError);
    expect(() => usdToNano(-1)).toThrow(RangeError);
    expect(() => usdToNano("-1")).toThrow(RangeError);
    expect(() => usdToNano("abc")).toThrow(RangeError);
    expect(() => usdToNano("1e3")).toThrow(RangeError);
    expect(() => usdToNano(Number.NaN)).toThrow(RangeError);
    expect(() => usdToNano(Number.POSITIVE_INFINITY)).toThrow(RangeError);
  });

  it("refuses amounts beyond the safe integer range of nano-dollars", () => {
    expect(() => usdToNano("10000000")).toThrow(/too large/);
    expect(usdToNano("9000000")).toBe(9_000_000_000_000_000);
  });
});

describe("tokenCost, one price component at a time", () => {
  it("charges input tokens at the input price: 1234 × $3/M = 3 702 000 nano", () => {
    expect(tokenCost(prices({ input: 3 }), { ...none, input: 1234 })).toBe(3_702_000);
  });

  it("charges output tokens at the output price: 567 × $15/M = 8 505 000 nano", () => {
    expect(tokenCost(prices({ output: 15 }), { ...none, output: 567 })).toBe(8_505_000);
  });

  it("charges cache reads at the cache-read price: 8910 × $0.3/M = 2 673 000 nano", () => {
    expect(tokenCost(prices({ cacheRead: 0.3 }), { ...none, cacheRead: 8910 })).toBe(2_673_000);
  });

  it("charges cache writes at the cache-write price: 1112 × $3.75/M = 4 170 000 nano", () => {
    expect(tokenCost(prices({ cacheWrite: 3.75 }), { ...none, cacheWrite: 1112 })).toBe(4_170_000);
  });

  it("sums the four components", () => {
    const p = prices({ input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 });
    expect(tokenCost(p, { input: 1234, output: 567, cacheRead: 8910, cacheWrite: 1112 })).toBe(3_702_000 + 8_505_000 + 2_673_000 + 4_170_000);
  });

  it("prices a sub-cent rate like $0.075/M to the nano-dollar: 1234 × 75 = 92 550 nano", () => {
    expect(tokenCost(prices({ input: 0.075 }), { ...none, input: 1234 })).toBe(92_550);
  });

  it("rounds up once, on the sum, not per component", () => {
    // 3 × 7.5 = 22.5 nano → 23; two components of 0.5 nano each → 1, not 2.
    expect(tokenCost(prices({ cacheRead: 0.0075 }), { ...none, cacheRead: 3 })).toBe(23);
    const half = prices({ input: 0.0005, output: 0.0005 });
    expect(tokenCost(half, { ...none, input: 1, output: 1 })).toBe(1);
  });

  it("stays exact past 2^53 intermediate products (2M output tokens at $15/M = $30)", () => {
    expect(tokenCost(prices({ output: 15 }), { ...none, output: 2_000_000 })).toBe(30_000_000_000);
  });

  it("costs nothing for no tokens", () => {
    expect(tokenCost(prices({ input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 }), none)).toBe(0);
  });
});

describe("rendering nano-dollars", () => {
  it("formatUsd writes at most 9 decimals without trailing zeros", () => {
    expect(formatUsd(0)).toBe("0");
    expect(formatUsd(1)).toBe("0.000000001");
    expect(formatUsd(1_500_000_000)).toBe("1.5");
    expect(formatUsd(4_499_475)).toBe("0.004499475");
    expect(formatUsd(12_000_000_000)).toBe("12");
    expect(formatUsd(-2_000_000_000)).toBe("-2");
  });

  // A reserve for max_tokens: 1e300 read "needs up to 4e+294.053110272 USD" in its 402.
  it("formatUsd writes an amount past 2^53 nano-dollars as whole dollars, without exponent or garbage decimals", () => {
    expect(formatUsd(4e303)).toMatch(/^\d+$/);
    expect(formatUsd(2 ** 60)).toBe(String(2n ** 60n / 1_000_000_000n));
  });

  it("nanoToUsd gives cost_usd as a JSON number with the same digits", () => {
    expect(JSON.stringify(nanoToUsd(4_499_475))).toBe("0.004499475");
    expect(JSON.stringify(nanoToUsd(123_456_789_012))).toBe("123.456789012");
    expect(JSON.stringify(nanoToUsd(1))).toBe("1e-9");
  });

  it("round-trips formatUsd through usdToNano", () => {
    for (const n of [0, 1, 75, 92_550, 999_999_999, 1_000_000_001, 123_456_789_012]) expect(usdToNano(formatUsd(n))).toBe(n);
  });
});

describe("tokenCost's plain-number path", () => {
  const reference = (p: { input: number; output: number; cacheRead: number; cacheWrite: number }, u: { input: number; output: number; cacheRead: number; cacheWrite: number }) => {
    const micro = BigInt(u.input) * BigInt(p.input) + BigInt(u.output) * BigInt(p.output) + BigInt(u.cacheRead) * BigInt(p.cacheRead) + BigInt(u.cacheWrite) * BigInt(p.cacheWrite);
    return Number((micro + 999_999n) / 1_000_000n);
  };

  it("agrees with BigInt arithmetic to the nano-dollar on random requests, small and near the 2^51 switch-over", () => {
    let seed = 7;
    const rnd = (max: number) => {
      seed = (seed * 48271) % 2147483647;
      return Math.floor((seed / 2147483647) * max);
    };
    for (let i = 0; i < 20_000; i++) {
      const big = i % 2 === 0;
      // Prices are nano-dollars per million tokens ($75/M = 7.5e10); big requests cross 2^51 per product.
      const p = { input: rnd(7.5e10), output: rnd(7.5e10), cacheRead: rnd(7.5e9), cacheWrite: rnd(9e10) };
      const u = { input: rnd(big ? 2e6 : 2e5), output: rnd(big ? 2e6 : 3e4), cacheRead: rnd(big ? 2e6 : 1e5), cacheWrite: rnd(1e5) };
      expect(tokenCost(p, u)).toBe(reference(p, u));
    }
  });

  it("still refuses a fractional token count, as the BigInt path does", () => {
    expect(() => tokenCost({ input: 3, output: 15, cacheRead: 0, cacheWrite: 0 }, { input: 1.5, output: 0, cacheRead: 0, cacheWrite: 0 })).toThrow();
  });
});
