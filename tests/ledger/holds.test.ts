import { describe, expect, it } from "bun:test";
import { Holds, type Hold } from "../../src/store/ledger/holds.ts";

// The running holds in memory (store/ledger/holds.ts): settled accounts' and keys' entries are kept
// between their requests and swept in bulk; the sums the reserve checks must survive every sweep.

const hold = (requestId: string, accountId: number, keyId: number, amountNano: number): Hold => ({ requestId, accountId, keyId, amountNano });

describe("running holds", () => {
  it("keep each account's and key's held sum through the sweeps of thousands of settled ones", () => {
    const holds = new Holds();
    const long = hold("long", 1, 11, 500);
    holds.add(long);
    let midway: Hold | null = null;
    for (let i = 1; i <= 5000; i++) {
      const h = hold(`r${i}`, 1000 + i, 100_000 + i, i);
      holds.add(h);
      if (i === 2500) holds.add((midway = hold("mid", 2, 22, 70)));
      expect(holds.remove(h)).toBe(true);
    }
    expect([holds.account(1), holds.key(11), holds.account(2), holds.key(22)]).toEqual([500, 500, 70, 70]);
    expect([holds.account(1001), holds.key(105_000), holds.total, holds.count]).toEqual([0, 0, 570, 2]);
    holds.remove(long);
    holds.remove(midway!);
    expect([holds.account(1), holds.account(2), holds.total, holds.count]).toEqual([0, 0, 0, 0]);
  });
});
