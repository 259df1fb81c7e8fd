// The benchmark's upstream, in its own process: the test suite's mock vendor (OpenAI chat JSON/SSE
// with the final usage chunk, Anthropic Messages JSON/SSE) on loopback with zero added latency,
// plus a second instance paced like an LLM (paceMs between SSE events) for the streaming check.
// Prints one JSON line: { url, pacedUrl, control }. GET control/hits answers the request counters.
//
//   bun bench/upstream.ts [--pace-ms 20]
import { parseArgs } from "node:util";
import { startMockUpstream, type MockUpstream } from "../tests/support/mock-upstream.ts";

const { values } = parseArgs({ options: { "pace-ms": { type: "string", default: "20" } } });
const paceMs = Number(values["pace-ms"]);

const fast = await startMockUpstream();
const paced = await startMockUpstream({ paceMs });

const total = (up: MockUpstream) => Object.values(up.hits).reduce((a, b) => a + b, 0);

// The mock records every request for tests to inspect; a benchmark makes millions, so forget them
// (the hit counters stay) to keep this process's memory and GC flat.
setInterval(() => {
  fast.requests.length = 0;
  paced.requests.length = 0;
}, 500);

const control = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: () => Response.json({ fast: total(fast), paced: total(paced), routes: fast.hits }),
});

const stop = async () => {
  await Promise.allSettled([fast.stop(), paced.stop(), control.stop(true)]);
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);

console.log(JSON.stringify({ url: fast.url, pacedUrl: paced.url, control: `http://127.0.0.1:${control.port}`, pid: process.pid }));
