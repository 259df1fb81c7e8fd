import { afterEach, describe, expect, it } from "bun:test";
import { newRequestId, requestIdPrefixAt } from "../../src/core/request-id.ts";

// Pruning deletes request_logs by id range (store/request-log/rows.ts): an id must start with the
// time it was made, also when its start is kept from an earlier request of the same millisecond.

const realNow = Date.now;
afterEach(() => {
  Date.now = realNow;
});

describe("request ids", () => {
  it("start with the millisecond they were made in, also once the millisecond changes", () => {
    Date.now = () => 1_800_000_000_000;
    const a = newRequestId();
    const b = newRequestId();
    Date.now = () => 1_800_000_000_001;
    const c = newRequestId();
    expect(a.startsWith(requestIdPrefixAt(1_800_000_000_000))).toBe(true);
    expect(b.startsWith(requestIdPrefixAt(1_800_000_000_000))).toBe(true);
    expect(c.startsWith(requestIdPrefixAt(1_800_000_000_001))).toBe(true);
    expect(new Set([a, b, c]).size).toBe(3);
    expect([a, b, c].toSorted()).toEqual([a, b, c]);
  });

  it("are all of one width, and those of one millisecond sort in the order they were made", () => {
    Date.now = () => 1_800_000_000_000;
    const ids = Array.from({ length: 1000 }, newRequestId);
    expect(new Set(ids.map((id) => id.length))).toEqual(new Set([22]));
    expect(ids.toSorted()).toEqual(ids);
  });
});
