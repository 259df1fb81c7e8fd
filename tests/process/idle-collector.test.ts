import { describe, expect, test } from "bun:test";
import { idleCollector, SETTLE_PASSES } from "../../src/server.ts";

const MiB = 1024 * 1024;

/** A collector over a heap whose size the test sets, counting the collections, passes and shrinks it asks for. */
function rig(pendingRequests = 0) {
  const state = { heap: 50 * MiB, collections: 0, passes: 0, shrinks: 0, server: { pendingRequests } };
  const tick = idleCollector(state.server, {
    size: () => state.heap,
    collect: () => {
      state.collections++;
      state.heap = 50 * MiB;
    },
    settle: () => {
      state.passes++;
      state.heap -= MiB;
    },
    shrink: () => {
      state.shrinks++;
      state.heap -= 2 * MiB;
    },
  });
  return { state, tick };
}

describe("the idle collector of a serving gateway", () => {
  test("collects once when no request is in flight and the heap grew by 8 MiB or more", () => {
    const { state, tick } = rig();
    state.heap += 20 * MiB;
    tick();
    tick();
    expect(state.collections).toBe(1);
  });

  test("never collects while a request is in flight, however much the heap grew", () => {
    const { state, tick } = rig(3);
    state.heap += 200 * MiB;
    tick();
    expect(state.collections).toBe(0);
    state.server.pendingRequests = 0;
    tick();
    expect(state.collections).toBe(1);
  });

  test("leaves a heap that grew by less than 8 MiB since its last collection alone", () => {
    const { state, tick } = rig();
    state.heap += 7 * MiB;
    tick();
    expect(state.collections).toBe(0);
    expect(state.passes).toBe(0);
  });

  test("collects after a burst whose heap a check saw grow while requests were in flight, though it shrank before the server went idle", () => {
    const { state, tick } = rig(1000);
    state.heap += 150 * MiB;
    tick();
    state.heap = 52 * MiB;
    state.server.pendingRequests = 0;
    tick();
    expect(state.collections).toBe(1);
  });

  test("follows a burst's collection with its passes, one per idle check, then drops compiled code once", () => {
    const { state, tick } = rig();
    state.heap += 20 * MiB;
    tick();
    for (let i = 1; i <= SETTLE_PASSES; i++) {
      tick();
      expect([state.passes, state.shrinks]).toEqual([i, 0]);
    }
    tick();
    expect(state.shrinks).toBe(1);
    tick();
    tick();
    expect([state.collections, state.passes, state.shrinks]).toEqual([1, SETTLE_PASSES, 1]);
  });

  test("ends the steps after a burst when a request is in flight at a check, and never drops code then", () => {
    const { state, tick } = rig();
    state.heap += 20 * MiB;
    tick();
    state.server.pendingRequests = 1;
    tick();
    state.server.pendingRequests = 0;
    for (let i = 0; i < SETTLE_PASSES + 3; i++) tick();
    expect([state.passes, state.shrinks]).toEqual([0, 0]);
  });

  test("starts the steps over when the heap grows by 8 MiB again between them", () => {
    const { state, tick } = rig();
    state.heap += 20 * MiB;
    tick();
    tick();
    state.heap += 20 * MiB;
    tick();
    expect(state.collections).toBe(2);
    for (let i = 0; i < SETTLE_PASSES + 3; i++) tick();
    expect([state.passes, state.shrinks]).toEqual([1 + SETTLE_PASSES, 1]);
  });
});
