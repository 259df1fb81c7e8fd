// Usage that only streams have: the running total of a Messages stream, which later events
// overwrite piece by piece, and the estimate shown when a stream ends without any usage.

import type { TokenUsage } from "../ledger/money.ts";
import type { JsonObject, MessagesUsage } from "./wire.ts";

const count = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.floor(v) : null);

/**
 * Applies one event's usage (message_start's, then each message_delta's) to the running totals the
 * way MessageStream does (sse.md §4): counts are totals, never increments; a key that is absent or
 * null keeps the previous value.
 */
export function mergeMessagesUsage(prev: TokenUsage | null, u: MessagesUsage | JsonObject): TokenUsage {
  const base = prev ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  return {
    input: count(u.input_tokens) ?? base.input,
    output: count(u.output_tokens) ?? base.output,
    cacheRead: count(u.cache_read_input_tokens) ?? base.cacheRead,
    cacheWrite: count(u.cache_creation_input_tokens) ?? base.cacheWrite,
  };
}

/**
 * Our own count for a stream that ended without usage (some compatible servers ignore
 * stream_options.include_usage): the reservation's input estimate and 4 characters per output
 * token, the numbers relay/stream.ts bills when an adapter has no usage. Each machine shows it as
 * the stream's final usage and reports it as its usage, so the client sees what it is charged.
 */
export function estimatedUsage(inputTokens: number, outputChars: number): TokenUsage {
  return { input: inputTokens, output: Math.ceil(outputChars / 4), cacheRead: 0, cacheWrite: 0 };
}
