import pino from "pino";
import type { LogRow } from "../logs/request-log.ts";
import { nanoToUsd } from "../ledger/money.ts";

/**
 * The access log: one JSON line per /v1 request on stdout, from the same row the request log keeps
 * (so the two never disagree), plus the key's visible prefix. Never content, never a key. Written
 * through pino's asynchronous destination: the line is buffered and written between requests, not
 * on the request's path; `flush()` empties it at shutdown.
 */
export class AccessLog {
  private readonly destination = pino.destination({ fd: 1, sync: false });
  private readonly logger = pino(
    { base: null, timestamp: pino.stdTimeFunctions.isoTime, formatters: { level: (label) => ({ level: label }) } },
    this.destination,
  );

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
    try {
      this.destination.flushSync();
    } catch {
      // nothing buffered, or stdout closed: nothing left to save
    }
  }
}
