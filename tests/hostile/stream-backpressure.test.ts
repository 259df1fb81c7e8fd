import { afterAll, describe, expect, it } from "bun:test";
import { connect } from "node:net";
import { relayedResponse, START } from "./inprocess-relay.ts";

// The relay writes into Bun's response sink directly (relay/stream.ts); a client that stops reading
// must still stop the relay reading its upstream, or one slow socket buffers a whole answer.

const DELTA = new TextEncoder().encode(
  `event: content_block_delta\ndata: ${JSON.stringify({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "x".repeat(16 * 1024) } })}\n\n`,
);

/** An endless upstream answer that counts what the relay has read of it. */
function endlessUpstream() {
  const seen = { bytes: 0, cancelled: false };
  let started = false;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (!started) {
        started = true;
        c.enqueue(new TextEncoder().encode(START));
        return;
      }
      seen.bytes += DELTA.byteLength;
      c.enqueue(DELTA);
    },
    cancel() {
      seen.cancelled = true;
    },
  });
  return { body, seen };
}

const servers: { stop(force: boolean): void }[] = [];
afterAll(() => servers.forEach((s) => s.stop(true)));

describe("a client that stops reading a stream", () => {
  it("stops the relay reading the upstream, and its leaving cancels the upstream", async () => {
    const up = endlessUpstream();
    const server = Bun.serve({ port: 0, idleTimeout: 0, fetch: () => relayedResponse(up.body) });
    servers.push(server);
    const socket = connect(server.port!, "127.0.0.1", () => {
      socket.write("GET / HTTP/1.1\r\nHost: test\r\n\r\n");
      socket.pause();
    });
    await Bun.sleep(300);
    const held = up.seen.bytes;
    await Bun.sleep(300);
    expect(held).toBeGreaterThan(0);
    expect(held).toBeLessThan(32 * 1024 * 1024);
    expect(up.seen.bytes).toBe(held);
    socket.destroy();
    await Bun.sleep(100);
    expect(up.seen.cancelled).toBe(true);
  });
});
