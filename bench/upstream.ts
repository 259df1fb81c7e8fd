// The benchmark's upstream, in its own process: the test suite's mock vendor (OpenAI chat JSON/SSE
// with the final usage chunk, Anthropic Messages JSON/SSE) on loopback with zero added latency,
// plus a second instance paced like an LLM (paceMs between SSE events) for the streaming check.
// Prints one JSON line: { url, pacedUrl, control }. GET control/hits answers the request counters.
//
// The paced instance stamps each text delta with its send time, `|t<ms>|` (wall clock,
// performance.timeOrigin + performance.now(), µs precision): the probe subtracts it from its own
// receive time to get per-chunk forwarding latency. Text, because it is what survives the
// gateway's translation in both dialects; same machine, so both processes read the same clock.
//
//   bun bench/upstream.ts [--pace-ms 20]
import { parseArgs } from "node:util";
import { startMockUpstream, type MockUpstream } from "../tests/support/mock-upstream.ts";

const { values } = parseArgs({ options: { "pace-ms": { type: "string", default: "20" } } });
const paceMs = Number(values["pace-ms"]);

/** Stands in the mock's text for a stamp; five words, so five paced text deltas per answer. */
const PLACEHOLDER = "@stamp@";
const stamp = () => `|t${(performance.timeOrigin + performance.now()).toFixed(3)}|`;

const fast = await startMockUpstream();
const pacedMock = await startMockUpstream({ paceMs, default: { kind: "text", text: Array(5).fill(PLACEHOLDER).join(" ") } });

// The mock builds every frame when the request arrives, so the time cannot go in there; this relay
// in front of it fills the placeholders in as each event passes, right before the write to the
// client's socket. latin1 round-trips any byte, so nothing else in the stream changes.
const paced = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  idleTimeout: 0,
  async fetch(req) {
    const url = new URL(req.url);
    const res = await fetch(pacedMock.url + url.pathname + url.search, {
      method: req.method, headers: req.headers, body: await req.arrayBuffer(), signal: req.signal,
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
  fetch: () => Response.json({ fast: total(fast), paced: total(pacedMock), routes: fast.hits }),
});

const stop = async () => {
  await Promise.allSettled([fast.stop(), pacedMock.stop(), paced.stop(true), control.stop(true)]);
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);

console.log(
  JSON.stringify({ url: fast.url, pacedUrl: `http://127.0.0.1:${paced.port}`, control: `http://127.0.0.1:${control.port}`, pid: process.pid }),
);
