import { describe, expect, it } from "bun:test";
import { KeepAliveSweep } from "../../src/relay/keepalive.ts";
import { NativeMessagesMachine } from "../../src/dialects/native-stream.ts";
import { Cutoff } from "../../src/relay/cutoff.ts";
import { firstEvents, keepAlives, relayStream, type StreamStart } from "../../src/relay/stream.ts";
import type { RelayCall } from "../../src/relay/context.ts";
import type { Attempt } from "../../src/relay/routes.ts";

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
        c.enqueue(enc.encode('event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":1,"output_tokens":1}}}\n\n'));
        release = () => {
          c.enqueue(enc.encode('event: message_stop\ndata: {"type":"message_stop"}\n\n'));
          c.close();
        };
      },
    });
    const attempt = { route: { key: "r", provider: { id: "p" } }, response: new Response(upstream), abort: new AbortController(), attempts: 1 } as unknown as Attempt;
    const call = { svc: { cutoff: new Cutoff() }, requestId: "req", started: 0, log: { endpoint: "messages" } } as unknown as RelayCall;
    const opening = await firstEvents(attempt, "messages");
    const machine = new NativeMessagesMachine({ costOf: () => 0, estimatedInputTokens: 1 });
    const hold = { open: false } as StreamStart["hold"];
    const res = relayStream({ call, attempt, opening, machine, hold, model: {} as StreamStart["model"], estimatedInputTokens: 1, headers: {} });
    const reader = res.body!.getReader();
    await reader.read();
    expect(keepAlives.running).toBe(true);
    release();
    while (!(await reader.read()).done);
    expect(keepAlives.running).toBe(false);
  });
});
