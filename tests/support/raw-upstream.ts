// An upstream that misbehaves at the byte level, for the faults the scripted mock cannot stage: a
// body that stalls after its headers, a line that never ends, a redirect. Each test sets `handle`;
// every request is recorded with when its connection went away.

import { sse } from "./sse.ts";

export interface RawRequest {
  path: string;
  headers: Record<string, string>;
  /** Resolves when the gateway closed the connection or cancelled the body. */
  gone: Promise<void>;
  isGone: boolean;
  leave(): void;
}

export interface RawUpstream extends AsyncDisposable {
  readonly url: string;
  readonly requests: RawRequest[];
  handle: (req: Request, rec: RawRequest) => Response | Promise<Response>;
  stop(): Promise<void>;
}

const enc = new TextEncoder();

export async function startRawUpstream(): Promise<RawUpstream> {
  const requests: RawRequest[] = [];
  const self: RawUpstream = {
    url: "",
    requests,
    handle: () => new Response("no handler", { status: 500 }),
    stop: async () => {
      await server.stop(true);
    },
    [Symbol.asyncDispose]: () => self.stop(),
  };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const { promise, resolve } = Promise.withResolvers<void>();
      const rec: RawRequest = {
        path: new URL(req.url).pathname,
        headers: Object.fromEntries(req.headers),
        gone: promise,
        isGone: false,
        leave() {
          rec.isGone = true;
          resolve();
        },
      };
      req.signal.addEventListener("abort", () => rec.leave(), { once: true });
      requests.push(rec);
      await req.arrayBuffer();
      return self.handle(req, rec);
    },
  });
  Object.assign(self, { url: `http://127.0.0.1:${server.port}` });
  return self;
}

/**
 * A body that sends `parts` (then, with `more`, calls it on every read until it returns null, which
 * closes the body) and otherwise stays open without a byte: the stalled upstream.
 */
export function stalledBody(rec: RawRequest, parts: string[], more?: () => string | null | Promise<string | null>): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream<Uint8Array>({
    async pull(c) {
      if (i < parts.length) {
        c.enqueue(enc.encode(parts[i++]!));
        return;
      }
      if (more) {
        const next = await more();
        if (next === null) c.close();
        else c.enqueue(enc.encode(next));
        return;
      }
      await rec.gone; // never ends on its own
    },
    cancel() {
      rec.leave();
    },
  });
}

/** The opening events of an Anthropic stream, up to the first text delta. */
export const anthropicOpening = (text = "Hel") => [
  sse("message_start", {
    type: "message_start",
    message: { id: "msg_raw", type: "message", role: "assistant", model: "up", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 5, output_tokens: 1 } },
  }),
  sse("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
  sse("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text } }),
];

export const sseHeaders = { "content-type": "text/event-stream", "cache-control": "no-cache" };
