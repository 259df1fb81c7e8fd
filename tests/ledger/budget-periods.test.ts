import { describe, expect, it } from "bun:test";
import { periodEnd, periodStart } from "../../src/ledger/budget.ts";

// The UTC calendar periods a key's budget resets on (docs/api.md#budgets), on their edges.

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();

describe("a budget's period", () => {
  it("a day runs from 00:00 UTC to the next 00:00 UTC, whatever the server's zone", () => {
    expect(iso(periodStart("day", at("2026-11-26T23:59:59.999Z")))).toBe("2026-11-26T00:00:00.000Z");
    expect(iso(periodEnd("day", at("2026-11-26T23:59:59.999Z")))).toBe("2026-11-27T00:00:00.000Z");
    expect(iso(periodStart("day", at("2026-11-27T00:00:00Z")))).toBe("2026-11-27T00:00:00.000Z");
  });

  it("a week runs from Monday 00:00 UTC: a Sunday belongs to the week that began six days before", () => {
    expect(iso(periodStart("week", at("2026-11-29T12:00:00Z")))).toBe("2026-11-23T00:00:00.000Z");
    expect(iso(periodEnd("week", at("2026-11-29T23:59:59Z")))).toBe("2026-11-30T00:00:00.000Z");
    expect(iso(periodStart("week", at("2026-11-30T00:00:00Z")))).toBe("2026-11-30T00:00:00.000Z");
    // Across a month and a year.
    expect(iso(periodStart("week", at("2027-01-02T08:00:00Z")))).toBe("2026-12-28T00:00:00.000Z");
  });

  it("a month runs from the 1st 00:00 UTC, December into January, February as long as its year makes it", () => {
    expect(iso(periodStart("month", at("2026-12-31T23:00:00Z")))).toBe("2026-12-01T00:00:00.000Z");
    expect(iso(periodEnd("month", at("2026-12-31T23:00:00Z")))).toBe("2027-01-01T00:00:00.000Z");
    expect(iso(periodEnd("month", at("2028-02-15T00:00:00Z")))).toBe("2028-03-01T00:00:00.000Z");
    expect(periodEnd("month", at("2028-02-15T00:00:00Z")) - periodStart("month", at("2028-02-15T00:00:00Z"))).toBe(29 * 86_400_000);
  });
});
