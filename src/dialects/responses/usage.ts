// Chat usage → ledger buckets and → the Responses usage object.
// Private twin of src/dialects/usage.ts `usageFromChat` (written elsewhere); unify when both exist.

import type { TokenUsage } from "../../ledger/money.ts";
import type { ChatUsage, JsonObject } from "../wire.ts";

const count = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0);

/**
 * OpenAI's prompt_tokens INCLUDES cached tokens (translation.md §3), and cache_write_tokens (a newer
 * field some OpenAI-compatible servers send) too; each bucket is priced at its own rate, so the
 * uncached input is what is left after taking both out.
 */
export function tokenUsageFromChat(u: ChatUsage): TokenUsage {
  const cacheRead = count(u.prompt_tokens_details?.cached_tokens);
  const cacheWrite = count(u.prompt_tokens_details?.cache_write_tokens);
  return {
    input: Math.max(count(u.prompt_tokens) - cacheRead - cacheWrite, 0),
    output: count(u.completion_tokens),
    cacheRead,
    cacheWrite,
  };
}

/**
 * Responses usage. Codex parses it strictly: integer input/output/total tokens, and a non-null
 * `*_details` must hold its integer field, so both detail objects are always present.
 */
export function responsesUsage(u: ChatUsage, costUsd: number): JsonObject {
  const input = count(u.prompt_tokens);
  const output = count(u.completion_tokens);
  const inputDetails: JsonObject = { cached_tokens: count(u.prompt_tokens_details?.cached_tokens) };
  if (u.prompt_tokens_details?.cache_write_tokens != null) {
    inputDetails.cache_write_tokens = count(u.prompt_tokens_details.cache_write_tokens);
  }
  return {
    input_tokens: input,
    input_tokens_details: inputDetails,
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: count(u.completion_tokens_details?.reasoning_tokens) },
    total_tokens: count(u.total_tokens) || input + output,
    cost_usd: costUsd,
  };
}
