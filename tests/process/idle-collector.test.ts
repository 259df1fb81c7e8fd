import { describe, expect, test } from "bun:test";
import { idleCollector } from "../../src/server.ts";

const MiB = 1024 * 1024;

/** A collector over a heap whose size the test sets, counting the collections it asks for. */
function rig(pendingRequests = 0) {
  const state = { heap: 50 * MiB, collections: 0, server: { pendingRequests } };
  const tick = idleCollector(state.server, () => state.heap, () => {
    state.collections++;
    state.heap = 50 * MiB;
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
  });
});
