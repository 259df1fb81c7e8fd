// Chat usage → the Responses usage object. Ledger buckets come from usageFromChat in ../usage.ts.

import type { ChatUsage, JsonObject } from "../../wire/shapes.ts";

const count = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0);

/**
 * Responses usage. Codex parses it strictly: integer input/output/total tokens, and a non-null
 * `*_details` must hold its integer field, so both detail objects are always present.
 */
export function responsesUsage(u: ChatUsage, costUsd: number): JsonObject {
  const input = count(u.prompt_tokens);
  // Reasoning some providers report outside completion_tokens (a total above prompt + completion) is output, as billed.
  const output = count(u.completion_tokens) + Math.max(count(u.total_tokens) - input - count(u.completion_tokens), 0);
  const inputDetails: JsonObject = { cached_tokens: count(u.prompt_tokens_details?.cached_tokens) };
  if (u.prompt_tokens_details?.cache_write_tokens != null) {
    inputDetails.cache_write_tokens = count(u.prompt_tokens_details.cache_write_tokens);
  }
  const details = u.prompt_tokens_details?.cache_creation_token_details;
  if (details) inputDetails.cache_creation_token_details = details;
  const out: JsonObject = {
    input_tokens: input,
    input_tokens_details: inputDetails,
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: count(u.completion_tokens_details?.reasoning_tokens) },
    total_tokens: count(u.total_tokens) || input + output,
    cost_usd: costUsd,
  };
  if (u.server_tool_use) out.server_tool_use = u.server_tool_use;
  return out;
}
