// The benchmark's upstream, in its own process: the test suite's mock vendor (OpenAI chat JSON/SSE
// with the final usage chunk, Anthropic Messages JSON/SSE) on loopback with zero added latency,
// plus a second instance paced like an LLM (paceMs between SSE events) for the streaming check.
// Prints one JSON line: { url, pacedUrl, responsesUrl, control }. GET control/hits answers the request
// counters. responsesUrl answers POST /v1/responses (a short answer, JSON or SSE) for the bare proxy's
// side of the Responses cells; its hits count as the fast mock's.
//
// The paced instance stamps each text delta with its send time, `|t<ms>|` (wall clock,
// performance.timeOrigin + performance.now(), µs precision): the probe subtracts it from its own
// receive time to get per-chunk forwarding latency. Text, because it is what survives the
// gateway's translation in both dialects; same machine, so both processes read the same clock.
//
//   bun bench/upstream.ts [--pace-ms 20] [--paced-chunks 5]
import { parseArgs } from "node:util";
import { anthropicEvents } from "../tests/support/mock-dialects.ts";
import { startMockUpstream, type MockUpstream } from "../tests/support/mock-upstream.ts";

const { values } = parseArgs({ options: { "pace-ms": { type: "string", default: "20" }, "paced-chunks": { type: "string", default: "5" } } });
const paceMs = Number(values["pace-ms"]);
const pacedChunks = Number(values["paced-chunks"]);

/** Stands in the mock's text for a stamp; five words, so five paced text deltas per answer. */
const PLACEHOLDER = "@stamp@";
const stamp = () => `|t${(performance.timeOrigin + performance.now()).toFixed(3)}|`;

const fast = await startMockUpstream();
const pacedMock = await startMockUpstream({ paceMs, default: { kind: "text", text: Array(pacedChunks).fill(PLACEHOLDER).join(" ") } });

// A paced Messages stream is written here directly, the same events the mock would send, each
// stamped as it is enqueued: without the relay's hop the upstream side of the many-streams run (1,000
// streams, 50,000 events a second) costs less, and more of the machine's two cores go to what is
// measured.
let directHits = 0;
function pacedMessages(model: string, bodyBytes: number): Response {
  const frames = anthropicEvents({
    id: "msg_paced", model, text: Array(pacedChunks).fill(PLACEHOLDER).join(" "), calls: [], stopReason: "end_turn", stopSequence: null,
    usage: { input: Math.max(1, Math.ceil(bodyBytes / 4)), output: pacedChunks * 4, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
    argChunks: 3, includeUsage: false,
  });
  let i = 0;
  let gone = false;
  const body = new ReadableStream<Uint8Array>({
    async pull(c) {
      if (i > 0) await Bun.sleep(paceMs);
      if (gone) return;
      if (i === frames.length) return c.close();
      c.enqueue(Buffer.from(frames[i++]!.replaceAll(PLACEHOLDER, stamp)));
    },
    cancel() {
      gone = true;
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", "request-id": "req_paced" } });
}

const paced = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  idleTimeout: 0,
  async fetch(req) {
    const url = new URL(req.url);
    if (url.pathname === "/v1/messages") {
      const bytes = await req.arrayBuffer();
      const json = JSON.parse(Buffer.from(bytes).toString()) as { model?: string; stream?: boolean };
      if (json.stream === true) {
        directHits++;
        return pacedMessages(json.model ?? "mock-model", bytes.byteLength);
      }
      return relay(req, url, bytes);
    }
    return relay(req, url, await req.arrayBuffer());
  },
});

// The mock builds every frame when the request arrives, so the time cannot go in there; this relay
// in front of it fills the placeholders in as each event passes, right before the write to the
// client's socket. latin1 round-trips any byte, so nothing else in the stream changes.
async function relay(req: Request, url: URL, bytes: ArrayBuffer): Promise<Response> {
  const res = await fetch(pacedMock.url + url.pathname + url.search, {
    method: req.method, headers: req.headers, body: bytes, signal: req.signal,
  });
  const body = res.body?.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform: (chunk, out) => out.enqueue(Buffer.from(Buffer.from(chunk).toString("latin1").replaceAll(PLACEHOLDER, stamp), "latin1")),
    }),
  );
  const headers = new Headers(res.headers);
  // Stamps are longer than the placeholder; Bun frames the rewritten body itself.
  headers.delete("content-length");
  headers.delete("transfer-encoding");
  return new Response(body, { status: res.status, headers });
}

// The Responses answer the bare proxy forwards: what a Responses server would send for the turn, short.
let responsesHits = 0;
const responsesSse = (model: string) =>
  [
    { type: "response.created", response: { id: "resp_mock", object: "response", status: "in_progress", model, output: [] } },
    ...["Hello ", "from the ", "mock upstream."].map((delta) => ({ type: "response.output_text.delta", item_id: "msg_mock", output_index: 0, content_index: 0, delta })),
    { type: "response.completed", response: responsesJson(model) },
  ]
    .map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`)
    .join("");
function responsesJson(model: string): object {
  return {
    id: "resp_mock", object: "response", status: "completed", model,
    output: [{ type: "message", id: "msg_mock", status: "completed", role: "assistant", content: [{ type: "output_text", text: "Hello from the mock upstream.", annotations: [] }] }],
    usage: { input_tokens: 25_000, output_tokens: 7, total_tokens: 25_007 },
  };
}
const responses = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    responsesHits++;
    const body = (await req.json()) as { model?: string; stream?: boolean };
    const model = body.model ?? "mock-model";
    return body.stream
      ? new Response(responsesSse(model), { headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" } })
      : Response.json(responsesJson(model));
  },
});

const total = (up: MockUpstream) => Object.values(up.hits).reduce((a, b) => a + b, 0);

// The mock records every request for tests to inspect; a benchmark makes millions, so forget them
// (the hit counters stay) to keep this process's memory and GC flat.
setInterval(() => {
  fast.requests.length = 0;
  pacedMock.requests.length = 0;
}, 500);

const control = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: () => Response.json({ fast: total(fast) + responsesHits, paced: total(pacedMock) + directHits, routes: { ...fast.hits, "POST /v1/responses": responsesHits } }),
});

const stop = async () => {
  await Promise.allSettled([fast.stop(), pacedMock.stop(), paced.stop(true), responses.stop(true), control.stop(true)]);
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);

console.log(
  JSON.stringify({
    url: fast.url, pacedUrl: `http://127.0.0.1:${paced.port}`, responsesUrl: `http://127.0.0.1:${responses.port}`,
    control: `http://127.0.0.1:${control.port}`, pid: process.pid,
  }),
);
