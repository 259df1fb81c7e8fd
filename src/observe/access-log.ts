import { writeSync } from "node:fs";
import type { LogRow } from "../store/request-log/contract.ts";
import { nanoToUsd } from "../core/money.ts";
import { routeName } from "./route-name.ts";

/** Lines go out when this much is buffered, or at the latest every FLUSH_MS. */
const BUFFER_CHARS = 8 * 1024;
const FLUSH_MS = 500;

/**
 * The access log: one JSON line per /v1 request on stdout, from the same row the request log keeps
 * (so the two never disagree), plus the key's visible prefix; and one per dashboard call under /api/.
 * Never content, never a key, never a cookie.
 *
 * Not pino, on purpose (a logger belongs only where it costs no measurable throughput): pino
 * cost about 120 µs of CPU per request at c=1 writing each line, and still 9–11 % of the CPU per
 * request at c=1 and c=16 with its writes buffered (bench/RESULTS.md). A fixed-shape object through
 * the engine's JSON.stringify, buffered to 8 KiB writes or a flush every half second, measures within
 * noise of no access log. The operator's events (core/events.ts), a few lines at most, stay on pino.
 */
export class AccessLog {
  private buffer = "";
  // The rows of one group commit are written in the same millisecond: their time is formatted once
  // (toISOString is 0.35 to 0.4 µs, a third of a line's cost, bench/RESULTS.md).
  private isoAt = NaN;
  private iso = "";
  private readonly timer = setInterval(() => this.flush(), FLUSH_MS);

  constructor(private readonly write: (text: string) => void = (text) => void process.stdout.write(text)) {
    // Never what keeps a stopping process alive.
    this.timer.unref();
  }

  // One entry object, filled in for each line: JSON.stringify writes its keys in this order and leaves
  // out those left undefined, as it did a new object's, without allocating one per request. A line
  // built by hand in template strings measured slower than the engine's stringify (bench/RESULTS.md).
  private readonly entry: Record<string, string | number | boolean | undefined> = {
    level: "info",
    time: "",
    request_id: "",
    method: "",
    path: "",
    status: 0,
    error_code: undefined,
    model: undefined,
    route: undefined,
    provider: undefined,
    key_prefix: undefined,
    stream: undefined,
    latency_ms: 0,
    input_tokens: undefined,
    output_tokens: undefined,
    cost_usd: undefined,
    client_ip: undefined,
  };

  line(r: LogRow): void {
    const e = this.entry;
    e.time = this.now();
    e.request_id = r.requestId;
    e.method = r.method;
    e.path = r.path;
    e.status = r.status;
    e.error_code = r.errorCode ?? undefined;
    e.model = r.model ?? undefined;
    e.route = r.provider && r.upstreamModel ? routeName(r.provider, r.upstreamModel) : undefined;
    e.provider = r.provider ?? undefined;
    e.key_prefix = r.keyPrefix ?? undefined;
    e.stream = r.stream || undefined;
    e.latency_ms = Math.round(r.latencyMs);
    e.input_tokens = r.inputTokens ?? undefined;
    e.output_tokens = r.outputTokens ?? undefined;
    e.cost_usd = r.costNano ? nanoToUsd(r.costNano) : undefined;
    e.client_ip = r.clientIp ?? undefined;
    this.buffer += JSON.stringify(e) + "\n";
    if (this.buffer.length >= BUFFER_CHARS) this.flush();
  }

  /** A dashboard call under /api/: what was asked, of whom, and the answer's status; never a body, key or cookie. */
  call(c: { requestId: string; method: string; path: string; status: number; latencyMs: number; clientIp: string | null }): void {
    this.buffer +=
      JSON.stringify({
        level: "info",
        time: this.now(),
        request_id: c.requestId,
        method: c.method,
        path: c.path,
        status: c.status,
        latency_ms: Math.round(c.latencyMs),
        client_ip: c.clientIp ?? undefined,
      }) + "\n";
    if (this.buffer.length >= BUFFER_CHARS) this.flush();
  }

  /** The current time as `new Date().toISOString()` writes it. */
  private now(): string {
    const ms = Date.now();
    if (ms !== this.isoAt) {
      this.isoAt = ms;
      this.iso = new Date(ms).toISOString();
    }
    return this.iso;
  }

  /** Writes what is buffered (every half second, and at stop). */
  flush(): void {
    if (!this.buffer) return;
    const text = this.buffer;
    this.buffer = "";
    try {
      this.write(text);
    } catch {
      // stdout closed: the lines have nowhere to go, and the request must not fail for it
    }
  }

  /** At stop: what is left goes out synchronously, since the process exits right after. */
  close(): void {
    clearInterval(this.timer);
    if (!this.buffer) return;
    try {
      writeSync(1, this.buffer);
    } catch {
      // stdout closed: nowhere to write
    }
    this.buffer = "";
  }
}
