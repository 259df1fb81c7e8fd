import { afterAll, describe, expect, it } from "bun:test";
import { events } from "../../src/logs/events.ts";
import { relayInProcess, START } from "./inprocess-relay.ts";

const lines: Record<string, unknown>[] = [];
const restore = events.redirect((line) => lines.push(JSON.parse(line) as Record<string, unknown>));
afterAll(restore);

describe("a client that leaves while the relay waits on the upstream", () => {
  it("is not reported as an upstream failure", async () => {
    const upstream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode(START));
      },
    });
    const reader = await relayInProcess(upstream);
    await reader.read();
    const waiting = reader.read().catch(() => {});
    await Bun.sleep(10);
    await reader.cancel();
    await waiting;
    await Bun.sleep(10);
    expect(lines.filter((l) => l.event === "upstream_failed")).toEqual([]);
  });
});
