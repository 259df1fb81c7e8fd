// The physical limit: the thinnest passthrough proxy Bun can be, in its own process. Two
// listeners share the process: "buffered" reads the request body whole before forwarding (what the
// gateway must do: it parses the JSON), "streamed" pipes it through. Both stream the upstream's
// answer back untouched. The benchmark uses whichever is faster per cell as the baseline.
// Prints one JSON line: { buffered: port, streamed: port, pacedBuffered: port, ... }. POST /v1/responses
// goes to --responses (the mock's Responses answerer), everything else to its upstream.
//
//   bun bench/proxy.ts --upstream http://127.0.0.1:P --paced http://127.0.0.1:Q --responses http://127.0.0.1:R
import { parseArgs } from "node:util";

const { values } = parseArgs({ options: { upstream: { type: "string" }, paced: { type: "string" }, responses: { type: "string" } } });
if (!values.upstream || !values.paced || !values.responses) throw new Error("usage: bun bench/proxy.ts --upstream URL --paced URL --responses URL");
const responses = values.responses;

function listen(base: string, buffered: boolean): number {
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 255,
    async fetch(req) {
      const url = req.url;
      const path = url.slice(url.indexOf("/", url.indexOf("//") + 2));
      const body = buffered ? await req.arrayBuffer() : req.body;
      return fetch((path === "/v1/responses" ? responses : base) + path, { method: req.method, headers: req.headers, body });
    },
  });
  return server.port!;
}

const ports = {
  buffered: listen(values.upstream, true),
  streamed: listen(values.upstream, false),
  pacedBuffered: listen(values.paced, true),
  pacedStreamed: listen(values.paced, false),
  pid: process.pid,
};
process.on("SIGTERM", () => process.exit(0));
process.on("SIGINT", () => process.exit(0));
console.log(JSON.stringify(ports));
