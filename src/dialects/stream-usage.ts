// Usage that only streams have: the running total of a Messages stream, which later events
// overwrite piece by piece, and the estimate shown when a stream ends without any usage.

import { cacheWrites, type TokenUsage } from "../core/money.ts";
import { messagesTier, regionOf, withExtras, withRegion } from "./usage.ts";
import type { JsonObject, MessagesUsage } from "../wire/shapes.ts";
import type { StreamOutcome } from "./stream-machine.ts";
import { estimateTokens, TextCount, type TextSize } from "../ledger/estimate.ts";
import { isObject } from "./fields.ts";

const count = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.floor(v) : null);

/**
 * Applies one event's usage (message_start's, then each message_delta's) to the running totals the
 * way MessageStream does (sse.md §4): counts are totals, never increments; a key that is absent or
 * null keeps the previous value.
 */
export function mergeMessagesUsage(prev: TokenUsage | null, u: MessagesUsage | JsonObject): TokenUsage {
  const base = prev ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  const m = u as MessagesUsage;
  // The write total and its split arrive together or apart (message_delta may repeat the total alone).
  const total = count(m.cache_creation_input_tokens) ?? cacheWrites(base);
  const w1h = isObject(m.cache_creation) ? (count(m.cache_creation.ephemeral_1h_input_tokens) ?? base.cacheWrite1h ?? 0) : (base.cacheWrite1h ?? 0);
  const w5 = isObject(m.cache_creation) ? (count(m.cache_creation.ephemeral_5m_input_tokens) ?? 0) : 0;
  const searches = isObject(m.server_tool_use) ? count(m.server_tool_use.web_search_requests) : null;
  const out: TokenUsage = {
    input: count(m.input_tokens) ?? base.input,
    output: count(m.output_tokens) ?? base.output,
    cacheRead: count(m.cache_read_input_tokens) ?? base.cacheRead,
    cacheWrite: Math.max(total - w1h, w5),
  };
  // speed and inference_geo come in message_start only: message_delta's usage has no such keys and keeps them.
  return withRegion(withExtras(out, w1h, searches ?? base.webSearches ?? 0, messagesTier(m) ?? base.serviceTier), regionOf(m) ?? base.inferenceGeo);
}

/**
 * Our own count for an answer that ended without usage (some compatible servers ignore
 * stream_options.include_usage): the reservation's input estimate and the plain estimate of the
 * output text (ledger/estimate.ts: bytes and characters, so CJK counts a token a character), the
 * numbers relay/stream.ts bills when a machine has no usage. Each machine shows it as the stream's
 * final usage and reports it as its usage, so the client sees what it is charged.
 */
export function estimatedUsage(inputTokens: number, output: TextSize): TokenUsage {
  return { input: inputTokens, output: estimateTokens(output.bytes, output.chars), cacheRead: 0, cacheWrite: 0 };
}

const NOTHING: TextSize = { bytes: 0, chars: 0 };
/** Our input estimate under counts still to come (absent is not zero). */
export const inputEstimate = (inputTokens: number): TokenUsage => estimatedUsage(inputTokens, NOTHING);

/**
 * What the relay reads from a translator, kept the same way by each: the upstream's usage so far,
 * what the final usage event billed once sent, characters produced (for cut streams), and how the
 * stream went (the outcome of its StreamMachine).
 */
export abstract class StreamTally {
  protected realUsage: TokenUsage | null = null;
  /** realUsage's input counts came from the upstream (not our estimate under its output count). */
  protected inputReported = false;
  /** realUsage's output count is the upstream's final one (its message_delta, its usage chunk), not message_start's running 1. */
  protected outputReported = false;
  protected billed: TokenUsage | null = null;
  protected cost: number | null = null;
  protected readonly out = new TextCount();
  protected ended = false;
  protected failedFlag = false;
  /** The upstream's natural end was seen (its finish_reason, its message_stop). */
  protected complete = false;
  /** The events returned so far carry the final usage with its cost_usd. */
  protected costShown = false;

  /** What the final usage event billed once sent (upstream usage, else our estimate); before that the upstream's so far, or null. */
  get usage(): TokenUsage | null {
    return this.billed ?? this.realUsage;
  }
  get inputCounted(): boolean {
    return this.realUsage !== null && this.inputReported;
  }
  get outputCounted(): boolean {
    return this.realUsage !== null && this.outputReported;
  }
  /** Characters of text, thinking and tool arguments produced so far (settlement of cut streams). */
  get outputChars(): number {
    return this.out.chars;
  }
  /** Their UTF-8 bytes. */
  get outputBytes(): number {
    return this.out.bytes;
  }
  /** The stream reached its natural end (message_stop / [DONE]) without failing. */
  get finished(): boolean {
    return this.ended && !this.failedFlag;
  }
  get failed(): boolean {
    return this.failedFlag;
  }
  get outcome(): StreamOutcome {
    return this.failedFlag ? "upstream_failed" : this.complete ? "completed" : "running";
  }
  get priced(): boolean {
    return this.costShown;
  }
  /** The cost the final usage event reported, in nano-dollars; null before it. */
  get costNano(): number | null {
    return this.cost;
  }
}
