import { requestIdPrefixAt } from "../../core/request-id.ts";
import { DAY_MS, type LogRow } from "./contract.ts";

// The stored form of a row, as both engines write it, and the retention's bounds.

/** request_logs' columns in the order of `logValues`. */
export const LOG_COLUMNS = `request_id, account_id, key_id, method, path, endpoint, model, provider, upstream_model, stream,
  status, error_code, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cache_write_1h_tokens, web_searches, service_tier, images, image_input_tokens, image_output_tokens, cost_nano, latency_ms, attempts, client_ip, created_at, inference_geo`;
export const LOG_COLUMN_COUNT = 28;

/** A row's stored values, in LOG_COLUMNS' order. */
export const logValues = (r: LogRow, now: number): unknown[] => fillLogValues([], r, now);

/**
 * A row's stored values written into `v` (LOG_COLUMN_COUNT of them), which is returned: SQLite binds
 * them before its `run` returns, so its writer refills one array rather than making 27 values' worth
 * a row (bench/RESULTS.md).
 */
export function fillLogValues(v: unknown[], r: LogRow, now: number): unknown[] {
  v[0] = r.requestId;
  v[1] = r.accountId ?? null;
  v[2] = r.keyId ?? null;
  v[3] = r.method;
  v[4] = r.path;
  v[5] = r.endpoint ?? null;
  v[6] = r.model ?? null;
  v[7] = r.provider ?? null;
  v[8] = r.upstreamModel ?? null;
  v[9] = r.stream ?? false;
  v[10] = r.status;
  v[11] = r.errorCode ?? null;
  v[12] = r.inputTokens ?? null;
  v[13] = r.outputTokens ?? null;
  v[14] = r.cacheReadTokens ?? null;
  v[15] = r.cacheWriteTokens ?? null;
  v[16] = r.cacheWrite1hTokens ?? null;
  v[17] = r.webSearches ?? null;
  v[18] = r.serviceTier ?? null;
  v[19] = r.images ?? null;
  v[20] = r.imageInputTokens ?? null;
  v[21] = r.imageOutputTokens ?? null;
  v[22] = r.costNano ?? 0;
  v[23] = Math.round(r.latencyMs);
  v[24] = r.attempts ?? 0;
  v[25] = r.clientIp ?? null;
  v[26] = now;
  v[27] = r.inferenceGeo ?? null;
  return v;
}

/** The first row older than the retention could be, by request id (time-ordered): a day of margin covers clock skew between processes, created_at decides. */
export const pruneBefore = (retentionDays: number, now: number) => {
  const cutoff = now - retentionDays * DAY_MS;
  return { idBefore: requestIdPrefixAt(cutoff + DAY_MS), createdBefore: cutoff };
};
