import { describe, expect, it } from "bun:test";
import type { RelayCall } from "../../src/relay/context.ts";
import { relayedResponse, START } from "./inprocess-relay.ts";

// An open stream lives for minutes and its call with it: the request's body (an agent's turn is
// 100 KB, and several times that once parsed) must not stay alive with every open stream.

/** An upstream that sends the opening and then stays open, as a model still thinking does. */
const openUpstream = () =>
  new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(new TextEncoder().encode(START));
    },
  });

describe("an open stream and the request's body", () => {
  it("lets go of the request's bytes and parsed body once the stream starts, its size kept for the bill", async () => {
    const bytes = new TextEncoder().encode(JSON.stringify({ model: "m", messages: [{ role: "user", content: "x".repeat(100_000) }] }));
    const call: Partial<RelayCall> = { bytes, json: JSON.parse(new TextDecoder().decode(bytes)) };
    const res = await relayedResponse(openUpstream(), call);
    const reader = res.body!.getReader();
    expect((await reader.read()).done).toBe(false);
    expect(call.bytes!.byteLength).toBe(0);
    expect(Object.keys(call.json!)).toEqual([]);
    expect(call.bodySize).toEqual({ bytes: bytes.byteLength, chars: bytes.byteLength });
    await reader.cancel();
  });
});
