import { describe, expect, it } from "bun:test";
import { KeepAliveSweep } from "../../src/relay/keepalive.ts";
import { keepAlives } from "../../src/relay/stream.ts";
import { relayInProcess, START, STOP } from "./inprocess-relay.ts";

// The keep-alive of open streams (one interval for all of them), on a 100 ms period instead of 15 s.

const PERIOD = 100;

describe("KeepAliveSweep", () => {
  it("sends a stream's keep-alive after a whole period in which it sent nothing", async () => {
    const sweep = new KeepAliveSweep(PERIOD);
    let sent = 0;
    const k = sweep.add(() => sent++);
    await Bun.sleep(PERIOD * 2.5);
    expect(sent).toBe(1);
    sweep.remove(k);
  });

  it("sends nothing to a stream that keeps sending", async () => {
    const sweep = new KeepAliveSweep(PERIOD);
    let sent = 0;
    const k = sweep.add(() => sent++);
    for (let i = 0; i < 10; i++) {
      await Bun.sleep(PERIOD / 4);
      k.quiet = false;
    }
    expect(sent).toBe(0);
    sweep.remove(k);
  });

  it("keeps each stream's silence apart: only the quiet one gets a keep-alive", async () => {
    const sweep = new KeepAliveSweep(PERIOD);
    const sent = { busy: 0, quiet: 0 };
    const busy = sweep.add(() => sent.busy++);
    const quiet = sweep.add(() => sent.quiet++);
    for (let i = 0; i < 10; i++) {
      await Bun.sleep(PERIOD / 4);
      busy.quiet = false;
    }
    expect(sent).toEqual({ busy: 0, quiet: 1 });
    sweep.remove(busy);
    sweep.remove(quiet);
  });

  it("sends nothing to a stream once it is removed", async () => {
    const sweep = new KeepAliveSweep(PERIOD);
    let sent = 0;
    const other = sweep.add(() => {});
    sweep.remove(sweep.add(() => sent++));
    await Bun.sleep(PERIOD * 3.5);
    expect(sent).toBe(0);
    sweep.remove(other);
  });

  it("still reaches the other streams when one's send throws", async () => {
    const sweep = new KeepAliveSweep(PERIOD);
    let sent = 0;
    const closed = sweep.add(() => {
      throw new TypeError("controller closed");
    });
    const open = sweep.add(() => sent++);
    await Bun.sleep(PERIOD * 2.5);
    expect(sent).toBe(1);
    sweep.remove(closed);
    sweep.remove(open);
  });

  it("runs its interval only while a stream is open", () => {
    const sweep = new KeepAliveSweep(PERIOD);
    expect(sweep.running).toBe(false);
    const a = sweep.add(() => {});
    const b = sweep.add(() => {});
    sweep.remove(a);
    expect(sweep.running).toBe(true);
    sweep.remove(b);
    expect(sweep.running).toBe(false);
  });
});

describe("a relayed stream", () => {
  it("joins the sweep while it runs and leaves it when it ends", async () => {
    const enc = new TextEncoder();
    let release = () => {};
    const upstream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(enc.encode(START));
        release = () => {
          c.enqueue(enc.encode(STOP));
          c.close();
        };
      },
    });
    const reader = await relayInProcess(upstream);
    await reader.read();
    expect(keepAlives.running).toBe(true);
    release();
    while (!(await reader.read()).done);
    expect(keepAlives.running).toBe(false);
  });
});
