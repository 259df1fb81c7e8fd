// Usage normalisation and the stop/finish tables (translation.md §3). The ledger prices each bucket
// at its own rate, so these decide what a request costs.
import { describe, expect, it } from "bun:test";
import { billableChatUsage, billableMessagesUsage, chatUsage, finishToStop, messagesUsage, stopToFinish, usageFromChat, usageFromMessages } from "../../src/dialects/usage.ts";
import { mergeMessagesUsage } from "../../src/dialects/stream-usage.ts";

describe("usageFromMessages", () => {
  it("takes input_tokens as the uncached input and the cache counts as their own buckets", () => {
    expect(usageFromMessages({ input_tokens: 86, output_tokens: 300, cache_read_input_tokens: 1920, cache_creation_input_tokens: 50 })).toEqual({ input: 86, output: 300, cacheRead: 1920, cacheWrite: 50 });
  });

  it("counts absent or null fields as 0", () => {
    expect(usageFromMessages({ output_tokens: 5, cache_read_input_tokens: null })).toEqual({ input: 0, output: 5, cacheRead: 0, cacheWrite: 0 });
  });
});

describe("usageFromChat", () => {
  it("subtracts cached tokens from prompt_tokens (OpenAI's 2006 prompt, 1920 cached)", () => {
    expect(usageFromChat({ prompt_tokens: 2006, completion_tokens: 300, total_tokens: 2306, prompt_tokens_details: { cached_tokens: 1920 } })).toEqual({ input: 86, output: 300, cacheRead: 1920, cacheWrite: 0 });
  });

  it("subtracts cache_write_tokens too", () => {
    expect(usageFromChat({ prompt_tokens: 1000, completion_tokens: 5, total_tokens: 1005, prompt_tokens_details: { cached_tokens: 200, cache_write_tokens: 300 } })).toEqual({ input: 500, output: 5, cacheRead: 200, cacheWrite: 300 });
  });

  it("never lets the uncached input go below 0", () => {
    // Portkey#1564: some servers leave cache tokens out of prompt_tokens.
    expect(usageFromChat({ prompt_tokens: 100, completion_tokens: 1, total_tokens: 101, prompt_tokens_details: { cached_tokens: 150 } }).input).toBe(0);
  });

  it("takes completion_tokens as the whole output, reasoning included", () => {
    expect(usageFromChat({ prompt_tokens: 1, completion_tokens: 90, total_tokens: 91, completion_tokens_details: { reasoning_tokens: 60 } }).output).toBe(90);
  });
});

describe("messagesUsage", () => {
  it("renders the four Anthropic counts", () => {
    expect(messagesUsage({ input: 86, output: 300, cacheRead: 1920, cacheWrite: 0 })).toEqual({ input_tokens: 86, output_tokens: 300, cache_creation_input_tokens: 0, cache_read_input_tokens: 1920 });
  });

  it("adds thinking tokens as output_tokens_details when known", () => {
    expect(messagesUsage({ input: 1, output: 9, cacheRead: 0, cacheWrite: 0 }, { thinkingTokens: 4 }).output_tokens_details).toEqual({ thinking_tokens: 4 });
  });
});

describe("chatUsage", () => {
  it("puts every input bucket into prompt_tokens and cache reads into cached_tokens", () => {
    expect(chatUsage({ input: 86, output: 300, cacheRead: 1920, cacheWrite: 0 })).toEqual({ prompt_tokens: 2006, completion_tokens: 300, total_tokens: 2306, prompt_tokens_details: { cached_tokens: 1920 } });
  });

  it("reports cache writes as cache_write_tokens so they round-trip", () => {
    const t = { input: 500, output: 5, cacheRead: 200, cacheWrite: 300 };
    expect(usageFromChat(chatUsage(t))).toEqual(t);
  });

  it("adds reasoning tokens as completion_tokens_details when known", () => {
    expect(chatUsage({ input: 1, output: 9, cacheRead: 0, cacheWrite: 0 }, { reasoningTokens: 4 }).completion_tokens_details).toEqual({ reasoning_tokens: 4 });
  });

  it("round-trips through the Messages rendering", () => {
    const t = { input: 7, output: 11, cacheRead: 13, cacheWrite: 17 };
    expect(usageFromMessages(messagesUsage(t))).toEqual(t);
  });
});

describe("stopToFinish", () => {
  const table: [string, string][] = [
    ["end_turn", "stop"],
    ["stop_sequence", "stop"],
    ["pause_turn", "stop"],
    ["max_tokens", "length"],
    ["model_context_window_exceeded", "length"],
    ["tool_use", "tool_calls"],
    ["refusal", "content_filter"],
    ["compaction", "stop"],
  ];
  for (const [stop, finish] of table) {
    it(`maps ${stop} to ${finish}`, () => expect(stopToFinish(stop)).toBe(finish));
  }

  it("keeps null (still running) as null", () => expect(stopToFinish(null)).toBeNull());
});

describe("finishToStop", () => {
  const table: [string, string][] = [
    ["stop", "end_turn"],
    ["length", "max_tokens"],
    ["tool_calls", "tool_use"],
    ["function_call", "tool_use"],
    ["content_filter", "refusal"],
    ["eos", "end_turn"],
  ];
  for (const [finish, stop] of table) {
    it(`maps ${finish} to ${stop}`, () => expect(finishToStop(finish)).toBe(stop));
  }

  it("keeps null (still running) as null", () => expect(finishToStop(null)).toBeNull());
});

describe("price classes in usage (docs/pricing.md)", () => {
  it("splits Anthropic's cache writes into 5-minute and 1-hour", () => {
    const u = usageFromMessages({ input_tokens: 1, output_tokens: 2, cache_creation_input_tokens: 300, cache_creation: { ephemeral_5m_input_tokens: 100, ephemeral_1h_input_tokens: 200 } });
    expect(u).toEqual({ input: 1, output: 2, cacheRead: 0, cacheWrite: 100, cacheWrite1h: 200 });
  });
  it("bills a split larger than its total at the split's counts", () => {
    const u = usageFromMessages({ input_tokens: 1, output_tokens: 2, cache_creation_input_tokens: 100, cache_creation: { ephemeral_5m_input_tokens: 100, ephemeral_1h_input_tokens: 50 } });
    expect(u).toMatchObject({ cacheWrite: 100, cacheWrite1h: 50 });
  });
  it("reads web searches from server_tool_use", () => {
    expect(usageFromMessages({ input_tokens: 1, output_tokens: 2, server_tool_use: { web_search_requests: 3 } }).webSearches).toBe(3);
  });
  it("takes a Chat total above prompt + completion as output (reasoning reported outside)", () => {
    expect(usageFromChat({ prompt_tokens: 1000, completion_tokens: 1499, total_tokens: 5308 }).output).toBe(4308);
  });
  it("keeps the answer's service tier", () => {
    expect(usageFromChat({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }, "priority").serviceTier).toBe("priority");
  });
  it("round-trips every class through the Chat shape and the Messages shape", () => {
    const t = { input: 10, output: 20, cacheRead: 30, cacheWrite: 40, cacheWrite1h: 50, webSearches: 6 };
    expect(usageFromChat(chatUsage(t))).toEqual(t);
    expect(usageFromMessages(messagesUsage(t))).toEqual(t);
  });
  it("bills a usage only when its required counts are whole and every optional count present is whole", () => {
    expect(billableChatUsage({ prompt_tokens: 1, completion_tokens: 2 })).toBe(true);
    expect(billableChatUsage({ prompt_tokens: 1, completion_tokens: 2, total_tokens: null, prompt_tokens_details: { cached_tokens: 0 } })).toBe(true);
    expect(billableChatUsage({ prompt_tokens: 1 })).toBe(false);
    expect(billableChatUsage({ prompt_tokens: 1, completion_tokens: 2, total_tokens: 3.5 })).toBe(false);
    expect(billableChatUsage({ prompt_tokens: 1, completion_tokens: 2, prompt_tokens_details: { cache_write_tokens: -1 } })).toBe(false);
    expect(billableMessagesUsage({ input_tokens: 1, output_tokens: 2, cache_read_input_tokens: 0 })).toBe(true);
    expect(billableMessagesUsage({ output_tokens: 2 })).toBe(false);
    expect(billableMessagesUsage({ output_tokens: 2 }, ["output_tokens"])).toBe(true);
    expect(billableMessagesUsage({ input_tokens: 1, output_tokens: 2, cache_creation_input_tokens: "4" })).toBe(false);
    expect(billableMessagesUsage([1, 2])).toBe(false);
  });
  it("refuses nested counts that are not counts, as it refuses flat ones", () => {
    expect(billableMessagesUsage({ input_tokens: 1, output_tokens: 1, cache_creation: { ephemeral_1h_input_tokens: -5 } })).toBe(false);
    expect(billableChatUsage({ prompt_tokens: 1, completion_tokens: 1, server_tool_use: { web_search_requests: "3" } })).toBe(false);
  });
});

describe("mergeMessagesUsage (stream totals)", () => {
  it("keeps message_start's 1-hour split when message_delta repeats only the total", () => {
    const start = mergeMessagesUsage(null, { input_tokens: 5, output_tokens: 1, cache_creation_input_tokens: 300, cache_creation: { ephemeral_5m_input_tokens: 100, ephemeral_1h_input_tokens: 200 } });
    const end = mergeMessagesUsage(start, { output_tokens: 50, cache_creation_input_tokens: 300, server_tool_use: { web_search_requests: 2 } });
    expect(end).toEqual({ input: 5, output: 50, cacheRead: 0, cacheWrite: 100, cacheWrite1h: 200, webSearches: 2 });
  });
});
