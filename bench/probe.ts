// Streaming probe, in its own process: a closed loop of `c` keep-alive connections, each sending a
// prebuilt HTTP/1.1 request over a raw socket and timing, per request, the first byte of the answer
// (TTFB) and its end. Raw sockets, not fetch, so the client adds as little as possible to what is
// measured. After the deadline no request starts, in-flight ones finish: responses = requests sent.
//
//   bun bench/probe.ts --port N --key K --body FILE --c 16 --duration 10 [--trace]
// FILE: "PATH\n" on the first line, the JSON body after it. Prints one JSON line (times in µs).
// --trace adds each response's arrival times (ms after the request was sent), for the pacing check,
// and per-chunk forwarding latency: for every `|t<ms>|` send stamp of the paced upstream (see
// bench/upstream.ts) found in a read, the wall-clock receive time of that read minus the stamp.
// --lags records only the per-chunk latency, summarised (p50, p99, count) instead of listed: the
// many-streams run sees millions of chunks.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { Socket } from "bun";
import { percentile } from "./lib/stats.ts";

const { values } = parseArgs({
  options: {
    host: { type: "string", default: "127.0.0.1" },
    port: { type: "string" },
    key: { type: "string", default: "none" },
    body: { type: "string" },
    c: { type: "string", default: "1" },
    duration: { type: "string", default: "10" },
    "max-requests": { type: "string" },
    trace: { type: "boolean", default: false },
    lags: { type: "boolean", default: false },
    /** connection i sends its first request i × ramp / c ms after the start: streams out of step, as real sessions are */
    "ramp-ms": { type: "string", default: "0" },
    /** "name: value", repeatable: what another gateway needs besides the key (bench/lib/peer.ts) */
    header: { type: "string", multiple: true, default: [] },
  },
});
if (!values.port || !values.body) throw new Error("usage: bun bench/probe.ts --port N --body FILE [--key K] [--c N] [--duration S] [--trace]");

const file = readFileSync(values.body, "utf8");
const nl = file.indexOf("\n");
const path = file.slice(0, nl);
const body = file.slice(nl + 1);
const request = Buffer.from(
  `POST ${path} HTTP/1.1\r\nhost: ${values.host}:${values.port}\r\ncontent-type: application/json\r\n` +
    `authorization: Bearer ${values.key}\r\nanthropic-version: 2023-06-01\r\naccept: text/event-stream\r\n` +
    values.header!.map((h) => `${h}\r\n`).join("") +
    `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
);
const concurrency = Number(values.c);
const maxRequests = values["max-requests"] === undefined ? Infinity : Number(values["max-requests"]);
const started = performance.now();
const deadline = started + Number(values.duration) * 1000;

const ttfb: number[] = [];
const total: number[] = [];
const arrivals: number[] = [];
const traces: number[][] = [];
const chunkLags: number[] = [];
const errors: string[] = [];
let sent = 0;

/** One HTTP/1.1 response read incrementally: headers, then a Content-Length or chunked body. */
class Response1 {
  status = 0;
  private buf = "";
  private headersDone = false;
  private contentLength = -1;
  private remaining = 0;
  private state: "size" | "data" | "trailer" = "size";

  /** true once the whole response has arrived */
  feed(s: string): boolean {
    this.buf += s;
    if (!this.headersDone) {
      const end = this.buf.indexOf("\r\n\r\n");
      if (end === -1) return false;
      const head = this.buf.slice(0, end).toLowerCase();
      this.status = Number(head.slice(9, 12));
      const cl = /\r\ncontent-length:\s*(\d+)/.exec(head);
      if (cl) this.contentLength = Number(cl[1]);
      else if (!/\r\ntransfer-encoding:\s*chunked/.test(head)) throw new Error("response with neither content-length nor chunked");
      this.buf = this.buf.slice(end + 4);
      this.headersDone = true;
    }
    if (this.contentLength >= 0) {
      this.remaining += this.buf.length;
      this.buf = "";
      return this.remaining >= this.contentLength;
    }
    for (;;) {
      if (this.state === "data") {
        const take = Math.min(this.remaining, this.buf.length);
        this.buf = this.buf.slice(take);
        this.remaining -= take;
        if (this.remaining > 0) return false;
        this.state = "size";
      }
      const eol = this.buf.indexOf("\r\n");
      if (eol === -1) return false;
      if (this.state === "trailer") {
        if (eol === 0) return true;
        this.buf = this.buf.slice(eol + 2);
        continue;
      }
      const size = parseInt(this.buf.slice(0, eol), 16);
      this.buf = this.buf.slice(eol + 2);
      if (size === 0) this.state = "trailer";
      else {
        this.remaining = size + 2; // the chunk and its CRLF
        this.state = "data";
      }
    }
  }
}

interface Conn {
  socket: Socket<undefined> | null;
  sentAt: number;
  times: number[];
  res: Response1;
  busy: boolean;
  /** the end of the last read that could be the start of a stamp split across reads */
  stampTail: string;
}

const STAMP = /\|t(\d+\.\d+)\|/g;
/** Longer than any stamp, so a split one is always whole in tail + next read. */
const TAIL = 32;

/** Records receive − send for every stamp completed by this read; a stamp counts once. */
function stampLags(conn: Conn, text: string, receivedAt: number): void {
  const buf = conn.stampTail + text;
  let end = 0;
  for (const m of buf.matchAll(STAMP)) {
    chunkLags.push(receivedAt - Number(m[1]));
    end = m.index + m[0].length;
  }
  conn.stampTail = buf.slice(Math.max(end, buf.length - TAIL));
}

let open = 0;
const { promise: allDone, resolve: finishAll } = Promise.withResolvers<void>();

function next(conn: Conn): void {
  if (performance.now() >= deadline || sent >= maxRequests || conn.socket === null) {
    conn.busy = false;
    conn.socket?.end();
    conn.socket = null;
    if (--open === 0) finishAll();
    return;
  }
  sent++;
  conn.busy = true;
  conn.times = [];
  conn.res = new Response1();
  conn.stampTail = "";
  conn.sentAt = performance.now();
  if (conn.socket.write(request) !== request.length) throw new Error("short write of a small request");
}

async function connect(conn: Conn, delayMs: number): Promise<void> {
  conn.socket = await Bun.connect({
    hostname: values.host!,
    port: Number(values.port),
    socket: {
      data(_s, data) {
        const now = performance.now();
        conn.times.push(now - conn.sentAt);
        const text = data.toString("latin1");
        if (values.trace || values.lags) stampLags(conn, text, performance.timeOrigin + now);
        let complete: boolean;
        try {
          complete = conn.res.feed(text);
        } catch (e) {
          errors.push(String(e));
          complete = true;
        }
        if (!complete) return;
        if (conn.res.status !== 200) errors.push(`HTTP ${conn.res.status}`);
        else {
          ttfb.push(conn.times[0]!);
          total.push(now - conn.sentAt);
          arrivals.push(conn.times.length);
          if (values.trace) traces.push(conn.times.map((t) => Math.round(t * 100) / 100));
        }
        next(conn);
      },
      close() {
        if (conn.busy) {
          errors.push("connection closed mid-response");
          conn.socket = null;
          next(conn);
        }
      },
      error(_s, e) {
        errors.push(`socket error: ${e.message}`);
      },
    },
  });
  if (delayMs > 0) await Bun.sleep(delayMs);
  next(conn);
}

const conns: Conn[] = Array.from({ length: concurrency }, () => ({ socket: null, sentAt: 0, times: [], res: new Response1(), busy: false, stampTail: "" }));
open = conns.length;
const ramp = Number(values["ramp-ms"]);
await Promise.all(conns.map((conn, i) => connect(conn, (i * ramp) / concurrency)));
const guard = setTimeout(() => {
  errors.push("probe timed out waiting for in-flight responses");
  finishAll();
}, Number(values.duration) * 1000 + 30_000);
await allDone;
clearTimeout(guard);
const elapsed = performance.now() - started;

const us = (ms: number) => Math.round(ms * 1000);
console.log(
  JSON.stringify({
    requests: ttfb.length,
    sent,
    errors: errors.length,
    first_errors: errors.slice(0, 5),
    elapsed_us: us(elapsed),
    rps: ttfb.length / (elapsed / 1000),
    ttfb_p50_us: us(percentile(ttfb, 50)),
    ttfb_p90_us: us(percentile(ttfb, 90)),
    ttfb_p99_us: us(percentile(ttfb, 99)),
    total_p50_us: us(percentile(total, 50)),
    arrivals_p50: percentile(arrivals, 50),
    ...(values.trace ? { traces, chunk_lags_ms: chunkLags.map((x) => Math.round(x * 1000) / 1000) } : {}),
    ...(values.lags
      ? { lag_n: chunkLags.length, lag_p50_ms: percentile(chunkLags, 50), lag_p99_ms: percentile(chunkLags, 99) }
      : {}),
  }),
);
process.exit(0);
