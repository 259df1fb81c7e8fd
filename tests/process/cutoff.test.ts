import { describe, expect, it } from "bun:test";
import { Cutoff } from "../../src/relay/cutoff.ts";

// The stop's deadline ends every upstream call still held, and only those.
describe("the cutoff", () => {
  it("aborts the calls it holds, not the ones already let go", () => {
    const cutoff = new Cutoff();
    const held = new AbortController();
    const done = new AbortController();
    cutoff.hold(held);
    cutoff.hold(done);
    cutoff.release(done);
    cutoff.abort(new Error("stop"));
    expect(held.signal.aborted).toBe(true);
    expect(done.signal.aborted).toBe(false);
    expect(cutoff.aborted).toBe(true);
  });

  it("ends at once a call that begins after the deadline", () => {
    const cutoff = new Cutoff();
    cutoff.abort(new Error("stop"));
    const late = new AbortController();
    cutoff.hold(late);
    expect(late.signal.aborted).toBe(true);
    expect((late.signal.reason as Error).message).toBe("stop");
  });
});
