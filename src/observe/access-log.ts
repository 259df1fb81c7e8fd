import pino from "pino";
import type { LogRow } from "../logs/request-log.ts";
import { nanoToUsd } from "../ledger/money.ts";

/** Lines are written when this much is buffered, or at the latest every FLUSH_MS. */
const BUFFER_BYTES = 8 * 1024; // below sonic-boom's maxWrite (16 KiB)
const FLUSH_MS = 500;

/**
 * The access log: one JSON line per /v1 request on stdout, from the same row the request log keeps
 * (so the two never disagree), plus the key's visible prefix. Never content, never a key. pino
 * writes into a buffer that goes out in 8 KiB writes or every half second: a write per line cost
 * about 120 µs of CPU per request at concurrency 1 (bench/RESULTS.md); `flush()` empties it at shutdown.
 */
export class AccessLog {
  private readonly destination = pino.destination({ fd: 1, sync: false, minLength: BUFFER_BYTES });
  private readonly timer = setInterval(() => this.destination.flush(), FLUSH_MS);
  private readonly logger = pino(
    { base: null, timestamp: pino.stdTimeFunctions.isoTime, formatters: { level: (label) => ({ level: label }) } },
    this.destination,
  );

  constructor() {
    // Never what keeps a stopping process alive.
    this.timer.unref();
  }

  line(r: LogRow): void {
    this.logger.info({
      request_id: r.requestId,
      method: r.method,
      path: r.path,
      status: r.status,
      error_code: r.errorCode ?? undefined,
      model: r.model ?? undefined,
      route: r.provider && r.upstreamModel ? `${r.provider}/${r.upstreamModel}` : undefined,
      provider: r.provider ?? undefined,
      key_prefix: r.keyPrefix ?? undefined,
      stream: r.stream || undefined,
      latency_ms: Math.round(r.latencyMs),
      input_tokens: r.inputTokens ?? undefined,
      output_tokens: r.outputTokens ?? undefined,
      cost_usd: r.costNano ? nanoToUsd(r.costNano) : undefined,
    });
  }

  flush(): void {
    clearInterval(this.timer);
    try {
      this.destination.flushSync();
    } catch {
      // nothing buffered, or stdout closed: nothing left to save
    }
  }
}
