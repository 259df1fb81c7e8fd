// Token counts in and out of each dialect, and the stop/finish reason tables.
// The ledger prices each bucket at its own rate, so counts must land in the right bucket: Anthropic's
// input_tokens is uncached input only, OpenAI's prompt_tokens includes the cached tokens
// (translation.md §3, Portkey#1564, genkit#5412).
import { cacheWrites, type TokenUsage } from "../core/money.ts";
import type { ChatUsage, MessagesUsage } from "../wire/shapes.ts";

/** A count as sent, or 0 when absent, null or nonsense. Never an estimate. */
function count(v: unknown): number {
  return typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0;
}

const whole = (v: unknown): boolean => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;

/**
 * A usage the ledger may bill: every count present is a whole, non-negative number and the `required`
 * ones are there. Anything else (missing, negative, fractional, strings) is no usage: the caller bills
 * its estimate, never zero (a usage of "-5" or {} once made answers free).
 */
function countsValid(u: unknown, names: readonly string[], required: readonly string[]): boolean {
  if (!u || typeof u !== "object" || Array.isArray(u)) return false;
  const o = u as Record<string, unknown>;
  // Index loops and the lists below made once: every answer and stream is checked here (bench/RESULTS.md).
  for (let i = 0; i < names.length; i++) {
    const v = o[names[i]!];
    if (v != null && !whole(v)) return false;
  }
  for (let i = 0; i < required.length; i++) if (!whole(o[required[i]!])) return false;
  return true;
}

const MESSAGES_COUNTS = ["input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"] as const;
const CHAT_COUNTS = ["prompt_tokens", "completion_tokens", "total_tokens", "prompt_cache_hit_tokens"] as const;
const SPLIT_COUNTS = ["ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens"] as const;
const SEARCH_COUNTS = ["web_search_requests"] as const;
const CACHE_DETAIL_COUNTS = ["cached_tokens", "cache_write_tokens"] as const;
const NONE: readonly string[] = [];
const MESSAGES_REQUIRED = ["input_tokens", "output_tokens"] as const;
const CHAT_REQUIRED = ["prompt_tokens", "completion_tokens"] as const;

/** A nested object of counts (the cache write split, server tool use) is valid when absent or all whole. */
const nestedValid = (o: unknown, names: readonly string[]): boolean => o == null || countsValid(o, names, NONE);

/** A Messages usage (a whole answer's, or message_start's) that can be billed; `required` for message_delta is output only. */
export function billableMessagesUsage(u: unknown, required: readonly string[] = MESSAGES_REQUIRED): boolean {
  if (!countsValid(u, MESSAGES_COUNTS, required)) return false;
  const o = u as MessagesUsage;
  return nestedValid(o.cache_creation, SPLIT_COUNTS) && nestedValid(o.server_tool_use, SEARCH_COUNTS);
}

/** A Chat usage that can be billed: prompt and completion counts, and valid cache details if any. */
export function billableChatUsage(u: unknown): boolean {
  if (!countsValid(u, CHAT_COUNTS, CHAT_REQUIRED)) return false;
  const c = u as ChatUsage;
  const d = c.prompt_tokens_details;
  return (
    (d == null || (countsValid(d, CACHE_DETAIL_COUNTS, NONE) && nestedValid(d.cache_creation_token_details, SPLIT_COUNTS))) &&
    nestedValid(c.server_tool_use, SEARCH_COUNTS)
  );
}

const nested = (o: unknown, k: string): unknown => (o !== null && typeof o === "object" ? (o as Record<string, unknown>)[k] : undefined);

/**
 * 5-minute and 1-hour cache writes from a total and its split (Anthropic's cache_creation, or its
 * copy in a Chat usage): the 1-hour part as split (`writes1h`), the rest of the total at the 5-minute
 * rate, and never less than the split's own 5-minute count (`writes5m`). Two numbers, not an object
 * made per usage read only to be taken apart.
 */
const writes1h = (split: unknown): number => count(nested(split, "ephemeral_1h_input_tokens"));
const writes5m = (total: number, split: unknown, w1h: number): number => Math.max(total - w1h, count(nested(split, "ephemeral_5m_input_tokens")));

/** Adds the classes a usage only sometimes has, when non-zero (plain usages stay four plain counts). */
export function withExtras(t: TokenUsage, cacheWrite1h: number, webSearches: number, serviceTier?: unknown): TokenUsage {
  if (cacheWrite1h > 0) t.cacheWrite1h = cacheWrite1h;
  if (webSearches > 0) t.webSearches = webSearches;
  if (typeof serviceTier === "string" && serviceTier) t.serviceTier = serviceTier;
  return t;
}

/**
 * The price tier a Messages usage reports: fast mode bills every class at a premium (docs/pricing.md#service-tiers);
 * Anthropic's service_tier (standard, priority, batch) has no per-token price of its own.
 */
export const messagesTier = (u: MessagesUsage): string | undefined => (u.speed === "fast" ? "fast" : undefined);

/** A region inference was pinned to (usage.inference_geo other than "global"), bounded for the log; undefined when global or absent. */
export function regionOf(u: MessagesUsage): string | undefined {
  const g = u.inference_geo;
  return typeof g === "string" && g !== "" && g !== "global" ? g.slice(0, 32) : undefined;
}

/** Sets the region on a usage when there is one (plain usages stay plain). */
export function withRegion(t: TokenUsage, region: string | undefined): TokenUsage {
  if (region) t.inferenceGeo = region;
  return t;
}

export function usageFromMessages(u: MessagesUsage): TokenUsage {
  const cacheWrite1h = writes1h(u.cache_creation);
  const cacheWrite = writes5m(count(u.cache_creation_input_tokens), u.cache_creation, cacheWrite1h);
  const t = withExtras(
    { input: count(u.input_tokens), output: count(u.output_tokens), cacheRead: count(u.cache_read_input_tokens), cacheWrite },
    cacheWrite1h,
    count(nested(u.server_tool_use, "web_search_requests")),
    messagesTier(u),
  );
  return withRegion(t, regionOf(u));
}

/**
 * `serviceTier`: the answer's service_tier (beside the usage, not in it). Output includes reasoning:
 * a total above prompt + completion is reasoning the provider reported outside completion_tokens.
 */
export function usageFromChat(u: ChatUsage, serviceTier?: unknown): TokenUsage {
  const d = u.prompt_tokens_details;
  // DeepSeek reports its cache hits (inside prompt_tokens) as prompt_cache_hit_tokens, with or without
  // cached_tokens beside them: the larger of the two, never their sum.
  const cacheRead = Math.max(count(d?.cached_tokens), count(u.prompt_cache_hit_tokens));
  // cache_write_tokens is a newer field (OpenRouter and others, reports); absent means none.
  const writes = count(d?.cache_write_tokens);
  const cacheWrite1h = writes1h(d?.cache_creation_token_details);
  const cacheWrite = writes5m(writes, d?.cache_creation_token_details, cacheWrite1h);
  const prompt = count(u.prompt_tokens);
  const completion = count(u.completion_tokens);
  const outside = Math.max(count(u.total_tokens) - prompt - completion, 0);
  return withExtras(
    { input: Math.max(prompt - cacheRead - writes, 0), output: completion + outside, cacheRead, cacheWrite },
    cacheWrite1h,
    count(nested(u.server_tool_use, "web_search_requests")),
    serviceTier,
  );
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
    cache_creation_input_tokens: cacheWrites(t),
    cache_read_input_tokens: t.cacheRead,
  };
  if (t.cacheWrite1h) u.cache_creation = { ephemeral_5m_input_tokens: t.cacheWrite, ephemeral_1h_input_tokens: t.cacheWrite1h };
  if (t.webSearches) u.server_tool_use = { web_search_requests: t.webSearches };
  if (detail.thinkingTokens !== undefined) u.output_tokens_details = { thinking_tokens: detail.thinkingTokens };
  return u;
}

/**
 * Anthropic's `service_tier` and `speed` for the service tier a Chat upstream's answer names: OpenAI's
 * priority is Anthropic's; OpenRouter's `fast` is fast mode at the standard tier; any other tier it
 * names (default, flex, scale) ran at neither. Null when it names none: nothing is known.
 */
function tierAndSpeed(tier: string | undefined): { service_tier: "standard" | "priority" | null; speed: "standard" | "fast" | null } {
  if (!tier) return { service_tier: null, speed: null };
  return { service_tier: tier === "priority" ? "priority" : "standard", speed: tier === "fast" ? "fast" : "standard" };
}

/**
 * The whole usage object of a Messages answer made from another dialect's (translation.md §3): every
 * field of the Anthropic SDK's `Usage`, null where the upstream did not say (`inference_geo`, thinking
 * tokens it did not report, a tier it did not name). `serviceTier`: the answer's service_tier when the
 * count carries none (an estimate).
 */
export function fullMessagesUsage(t: TokenUsage, detail: { thinkingTokens?: number; serviceTier?: string } = {}): MessagesUsage {
  return {
    input_tokens: t.input,
    output_tokens: t.output,
    cache_creation_input_tokens: cacheWrites(t),
    cache_read_input_tokens: t.cacheRead,
    cache_creation: { ephemeral_5m_input_tokens: t.cacheWrite, ephemeral_1h_input_tokens: t.cacheWrite1h ?? 0 },
    server_tool_use: t.webSearches ? { web_search_requests: t.webSearches, web_fetch_requests: 0 } : null,
    output_tokens_details: detail.thinkingTokens === undefined ? null : { thinking_tokens: detail.thinkingTokens },
    inference_geo: t.inferenceGeo ?? null,
    ...tierAndSpeed(t.serviceTier ?? detail.serviceTier),
  };
}

/**
 * message_delta's usage on a translated stream: the SDK's `MessageDeltaUsage`, null where there is
 * none (its stream helpers keep message_start's value for a null). The tier, speed and region are
 * message_start's alone; the cache split rides along when it has a 1-hour part, as before.
 */
export function deltaMessagesUsage(t: TokenUsage, detail: { thinkingTokens?: number } = {}): MessagesUsage {
  const { service_tier: _tier, speed: _speed, inference_geo: _geo, cache_creation, ...u } = fullMessagesUsage(t, detail);
  return t.cacheWrite1h ? { ...u, cache_creation } : u;
}

/**
 * message_start's usage on a translated stream: the input estimate and the answer's tier, which the
 * first chunk names. The cache split is null, not zeros: it is known only at the end, and the SDK's
 * stream helpers never take it from message_delta (whose counts replace the others).
 */
export function startMessagesUsage(estimatedInputTokens: number, serviceTier: string | undefined): MessagesUsage {
  return { ...fullMessagesUsage({ input: estimatedInputTokens, output: 0, cacheRead: 0, cacheWrite: 0 }, { serviceTier }), cache_creation: null };
}

/**
 * The Chat usage object for a count; the caller adds cost_usd. Classes Chat has no field for ride
 * in LiteLLM's names (docs/pricing.md): the 1-hour split under prompt_tokens_details, searches in
 * server_tool_use, so a translated usage reads back to the same bill.
 */
export function chatUsage(t: TokenUsage, detail: { reasoningTokens?: number } = {}): ChatUsage {
  const writes = cacheWrites(t);
  const prompt = t.input + t.cacheRead + writes;
  const u: ChatUsage = {
    prompt_tokens: prompt,
    completion_tokens: t.output,
    total_tokens: prompt + t.output,
    prompt_tokens_details: { cached_tokens: t.cacheRead },
  };
  // Only when non-zero, so plain OpenAI-shaped usage stays plain; with it the count round-trips.
  if (writes > 0) u.prompt_tokens_details!.cache_write_tokens = writes;
  if (t.cacheWrite1h) u.prompt_tokens_details!.cache_creation_token_details = { ephemeral_5m_input_tokens: t.cacheWrite, ephemeral_1h_input_tokens: t.cacheWrite1h };
  if (t.webSearches) u.server_tool_use = { web_search_requests: t.webSearches };
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

/**
 * The stop_reason of a Messages answer translated from Chat that holds tool calls. Several
 * compatible servers (vLLM, Ollama) finish tool calls with "stop", and Anthropic's SDK tool runner
 * runs tools only on "tool_use"; a length or content-filter cut stays visible (vllm#58228).
 */
export function toolAwareStop(stop: string, hasToolCalls: boolean): string {
  return hasToolCalls && stop === "end_turn" ? "tool_use" : stop;
}
