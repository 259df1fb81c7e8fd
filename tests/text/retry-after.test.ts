import { describe, expect, it } from "bun:test";
import { restSeconds } from "../../src/relay/capacity.ts";

// How long an overloaded key rests for the Retry-After its upstream sent (docs/operations.md#several-keys-and-weighted-routes).

const NOW = Date.parse("2026-11-27T01:00:00.000Z");

describe("a key's rest from Retry-After", () => {
  it("reads delta-seconds, rounding a fraction up", () => {
    expect(restSeconds("2", NOW)).toBe(2);
    expect(restSeconds("1.2", NOW)).toBe(2);
  });

  it("reads an HTTP date as the seconds until it", () => {
    expect(restSeconds("Fri, 27 Nov 2026 01:00:45 GMT", NOW)).toBe(45);
  });

  it("rests 30 s without the header or with one it cannot read", () => {
    expect(restSeconds(null, NOW)).toBe(30);
    expect(restSeconds("soon", NOW)).toBe(30);
    expect(restSeconds("-5", NOW)).toBe(30);
  });

  it("does not rest for 0 or a date already past", () => {
    expect(restSeconds("0", NOW)).toBe(0);
    expect(restSeconds("Fri, 27 Nov 2026 00:59:00 GMT", NOW)).toBe(0);
  });

  it("rests at most an hour, whatever the header says", () => {
    expect(restSeconds("999999999", NOW)).toBe(3600);
    expect(restSeconds("Fri, 01 Jan 2100 00:00:00 GMT", NOW)).toBe(3600);
  });
});
