// Token counts in and out of each dialect, and the stop/finish reason tables.
// The ledger prices each bucket at its own rate, so counts must land in the right bucket: Anthropic's
// input_tokens is uncached input only, OpenAI's prompt_tokens includes the cached tokens
// (translation.md §3, Portkey#1564, genkit#5412).
import type { TokenUsage } from "../core/money.ts";
import type { ChatUsage, MessagesUsage } from "../wire/shapes.ts";

/** A count as sent, or 0 when absent, null or nonsense. Never an estimate. */
function count(v: unknown): number {
  return typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0;
}

const whole = (v: unknown): boolean => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;

/**
 * A usage the ledger may bill: every count present is a whole, non-negative number and the `required`
 * ones are there. Anything else (missing, negative, fractional, strings) is no usage: the caller bills
 * its estimate, never zero (issue 14: a usage of "-5" or {} made answers free).
 */
function countsValid(u: unknown, names: readonly string[], required: readonly string[]): boolean {
  if (!u || typeof u !== "object" || Array.isArray(u)) return false;
  const o = u as Record<string, unknown>;
  for (const k of names) if (o[k] != null && !whole(o[k])) return false;
  return required.every((k) => whole(o[k]));
}

const MESSAGES_COUNTS = ["input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"] as const;
const CHAT_COUNTS = ["prompt_tokens", "completion_tokens", "total_tokens"] as const;

/** A Messages usage (a whole answer's, or message_start's) that can be billed; `required` for message_delta is output only. */
export function billableMessagesUsage(u: unknown, required: readonly string[] = ["input_tokens", "output_tokens"]): boolean {
  return countsValid(u, MESSAGES_COUNTS, required);
}

/** A Chat usage that can be billed: prompt and completion counts, and valid cache details if any. */
export function billableChatUsage(u: unknown): boolean {
  if (!countsValid(u, CHAT_COUNTS, ["prompt_tokens", "completion_tokens"])) return false;
  const d = (u as ChatUsage).prompt_tokens_details;
  return d == null || countsValid(d, ["cached_tokens", "cache_write_tokens"], []);
}

export function usageFromMessages(u: MessagesUsage): TokenUsage {
  return {
    input: count(u.input_tokens),
    output: count(u.output_tokens),
    cacheRead: count(u.cache_read_input_tokens),
    cacheWrite: count(u.cache_creation_input_tokens),
  };
}

export function usageFromChat(u: ChatUsage): TokenUsage {
  const cacheRead = count(u.prompt_tokens_details?.cached_tokens);
  // cache_write_tokens is a newer field (OpenRouter and others, reports); absent means none.
  const cacheWrite = count(u.prompt_tokens_details?.cache_write_tokens);
  return {
    input: Math.max(count(u.prompt_tokens) - cacheRead - cacheWrite, 0),
    output: count(u.completion_tokens),
    cacheRead,
    cacheWrite,
  };
}

/** Thinking tokens reported by Anthropic's `usage.output_tokens_details` (already inside output). */
export function thinkingTokens(u: MessagesUsage): number | undefined {
  const details = u.output_tokens_details as { thinking_tokens?: unknown } | undefined;
  return typeof details?.thinking_tokens === "number" ? details.thinking_tokens : undefined;
}

/** The Messages usage object for a count; the caller adds cost_usd. */
export function messagesUsage(t: TokenUsage, detail: { thinkingTokens?: number } = {}): MessagesUsage {
  const u: MessagesUsage = {
    input_tokens: t.input,
    output_tokens: t.output,
    cache_creation_input_tokens: t.cacheWrite,
    cache_read_input_tokens: t.cacheRead,
  };
  if (detail.thinkingTokens !== undefined) u.output_tokens_details = { thinking_tokens: detail.thinkingTokens };
  return u;
}

/** The Chat usage object for a count; the caller adds cost_usd. */
export function chatUsage(t: TokenUsage, detail: { reasoningTokens?: number } = {}): ChatUsage {
  const prompt = t.input + t.cacheRead + t.cacheWrite;
  const u: ChatUsage = {
    prompt_tokens: prompt,
    completion_tokens: t.output,
    total_tokens: prompt + t.output,
    prompt_tokens_details: { cached_tokens: t.cacheRead },
  };
  // Only when non-zero, so plain OpenAI-shaped usage stays plain; with it the count round-trips.
  if (t.cacheWrite > 0) u.prompt_tokens_details!.cache_write_tokens = t.cacheWrite;
  if (detail.reasoningTokens !== undefined) u.completion_tokens_details = { reasoning_tokens: detail.reasoningTokens };
  return u;
}

// translation.md §3. The matched stop sequence and the pause are lost on the way to Chat.
const STOP_TO_FINISH: ReadonlyMap<string, string> = new Map([
  ["end_turn", "stop"],
  ["stop_sequence", "stop"],
  ["pause_turn", "stop"],
  ["max_tokens", "length"],
  ["model_context_window_exceeded", "length"],
  ["tool_use", "tool_calls"],
  ["refusal", "content_filter"],
]);

// Back (translation.md §3). content_filter stays visible as refusal, where LiteLLM (end_turn) and
// musistudio (stop_sequence) hide it. A message.refusal is handled by the response translator.
const FINISH_TO_STOP: ReadonlyMap<string, string> = new Map([
  ["stop", "end_turn"],
  ["length", "max_tokens"],
  ["tool_calls", "tool_use"],
  ["function_call", "tool_use"],
  ["content_filter", "refusal"],
]);

/** Anthropic stop_reason → Chat finish_reason; null (still running) stays null, unknown → stop. */
export function stopToFinish(stop: string | null | undefined): string | null {
  return stop == null ? null : (STOP_TO_FINISH.get(stop) ?? "stop");
}

/** Chat finish_reason → Anthropic stop_reason; null stays null, unknown → end_turn. */
export function finishToStop(finish: string | null | undefined): string | null {
  return finish == null ? null : (FINISH_TO_STOP.get(finish) ?? "end_turn");
}
