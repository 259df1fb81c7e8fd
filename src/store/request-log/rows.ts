import { requestIdPrefixAt } from "../../core/request-id.ts";
import { DAY_MS, type LogRow } from "./contract.ts";

// The stored form of a row, as both engines write it, and the retention's bounds.

/** request_logs' columns in the order of `logValues`. */
export const LOG_COLUMNS = `request_id, account_id, key_id, method, path, endpoint, model, provider, upstream_model, stream,
  status, error_code, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cache_write_1h_tokens, web_searches, service_tier, images, image_input_tokens, image_output_tokens, cost_nano, latency_ms, attempts, client_ip, created_at`;
export const LOG_COLUMN_COUNT = 27;

/** A row's stored values, in LOG_COLUMNS' order. */
export function logValues(r: LogRow, now: number): unknown[] {
  return [
    r.requestId,
    r.accountId ?? null,
    r.keyId ?? null,
    r.method,
    r.path,
    r.endpoint ?? null,
    r.model ?? null,
    r.provider ?? null,
    r.upstreamModel ?? null,
    r.stream ?? false,
    r.status,
    r.errorCode ?? null,
    r.inputTokens ?? null,
    r.outputTokens ?? null,
    r.cacheReadTokens ?? null,
    r.cacheWriteTokens ?? null,
    r.cacheWrite1hTokens ?? null,
    r.webSearches ?? null,
    r.serviceTier ?? null,
    r.images ?? null,
    r.imageInputTokens ?? null,
    r.imageOutputTokens ?? null,
    r.costNano ?? 0,
    Math.round(r.latencyMs),
    r.attempts ?? 0,
    r.clientIp ?? null,
    now,
  ];
}

/** The first row older than the retention could be, by request id (time-ordered): a day of margin covers clock skew between processes, created_at decides. */
export const pruneBefore = (retentionDays: number, now: number) => {
  const cutoff = now - retentionDays * DAY_MS;
  return { idBefore: requestIdPrefixAt(cutoff + DAY_MS), createdBefore: cutoff };
};
