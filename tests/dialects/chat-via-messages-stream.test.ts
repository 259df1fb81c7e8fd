import { describe, expect, it } from "bun:test";
import { ChatViaMessagesStream, type ChatStreamItem, type ChatViaMessagesStreamOptions } from "../../src/dialects/chat-via-messages-stream.ts";
import { toolIdToMessages } from "../../src/dialects/tool-ids.ts";
import type { ChatChunk, MessagesEvent } from "../../src/wire/shapes.ts";
import { costOf, messagesEvents } from "./stream-fixtures.ts";

const make = (o: Partial<ChatViaMessagesStreamOptions> = {}) =>
  new ChatViaMessagesStream({ model: "claude-sonnet-4-5", includeUsage: false, costOf, estimatedInputTokens: 2000, created: 1763800000, ...o });

/** Feeds every event of a fixture, then done() as the route does at EOF. */
const run = (s: ChatViaMessagesStream, events: MessagesEvent[]): ChatStreamItem[] => [...events.flatMap((e) => s.push(e)), ...s.done()];

const ID = "chatcmpl-01XFDUDYJgAACzvnptvVoYEL";
const chunk = (delta: object, finish_reason: string | null = null, extra: object = {}): ChatChunk =>
  ({ id: ID, object: "chat.completion.chunk", created: 1763800000, model: "claude-sonnet-4-5", choices: [{ index: 0, delta, finish_reason }], ...extra }) as ChatChunk;
const role = chunk({ role: "assistant", content: "" });
// messages-*.sse: 25 uncached + 100 cache-read input tokens.
const usage = (completion: number, cost: number, extra: object = {}) => ({
  prompt_tokens: 125,
  completion_tokens: completion,
  total_tokens: 125 + completion,
  prompt_tokens_details: { cached_tokens: 100 },
  ...extra,
  cost_usd: cost,
});

const ev = (event: string, data: object): MessagesEvent => ({ event, data: { type: event, ...data } });
const started = () => {
  const s = make();
  s.push(messagesEvents("messages-text.sse")[0]!);
  return s;
};

describe("ChatViaMessagesStream", () => {
  it("translates a text stream and puts usage with cost_usd on the finish chunk when include_usage is off", () => {
    expect(run(make(), messagesEvents("messages-text.sse"))).toEqual([
      role,
      chunk({ content: "Hello" }),
      chunk({ content: "!" }),
      chunk({}, "stop", { usage: usage(12, 0.000285) }),
      "[DONE]",
    ]);
  });

  it("sends the finish chunk without usage, then a choices:[] usage chunk with the same id, when include_usage is on", () => {
    expect(run(make({ includeUsage: true }), messagesEvents("messages-text.sse"))).toEqual([
      role,
      chunk({ content: "Hello" }),
      chunk({ content: "!" }),
      chunk({}, "stop"),
      { id: ID, object: "chat.completion.chunk", created: 1763800000, model: "claude-sonnet-4-5", choices: [], usage: usage(12, 0.000285) },
      "[DONE]",
    ]);
  });

  it("numbers tool calls by tool block, not by content-block index", () => {
    expect(run(make(), messagesEvents("messages-tools.sse"))).toEqual([
      role,
      chunk({ content: "Checking both." }),
      chunk({ tool_calls: [{ index: 0, id: "toolu_01Wx", type: "function", function: { name: "get_weather", arguments: "" } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city": "Os' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: 'lo"}' } }] }),
      chunk({ tool_calls: [{ index: 1, id: "toolu_02Tz", type: "function", function: { name: "get_time", arguments: "" } }] }),
      chunk({ tool_calls: [{ index: 1, function: { arguments: "{}" } }] }),
      chunk({}, "tool_calls", { usage: usage(58, 0.000975) }),
      "[DONE]",
    ]);
  });

  it('gives a tool with no argument bytes the arguments "{}"', () => {
    const s = started();
    s.push(ev("content_block_start", { index: 0, content_block: { type: "tool_use", id: "toolu_1", name: "now", input: {} } }));
    s.push(ev("content_block_delta", { index: 0, delta: { type: "input_json_delta", partial_json: "" } }));
    expect(s.push(ev("content_block_stop", { index: 0 }))).toEqual([chunk({ tool_calls: [{ index: 0, function: { arguments: "{}" } }] })]);
  });

  // Anthropic's MessageStream keeps a tool_use block's start input when no input_json_delta follows
  // (some Anthropic-compatible servers send the whole input there): the Chat client gets the same.
  it("gives a tool with no argument bytes the input its content_block_start carried", () => {
    const s = started();
    s.push(ev("content_block_start", { index: 0, content_block: { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Oslo" } } }));
    expect(s.push(ev("content_block_stop", { index: 0 }))).toEqual([chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":"Oslo"}' } }] })]);
  });

  it("turns thinking into reasoning_content and drops the signature", () => {
    expect(run(make(), messagesEvents("messages-thinking.sse"))).toEqual([
      role,
      chunk({ reasoning_content: "The user wants" }),
      chunk({ reasoning_content: " a greeting." }),
      chunk({ content: "Hi!" }),
      chunk({}, "stop", { usage: usage(30, 0.000555, { completion_tokens_details: { reasoning_tokens: 21 } }) }),
      "[DONE]",
    ]);
  });

  it("turns an error event into an error chunk and sends no [DONE]", () => {
    const s = make();
    expect(run(s, messagesEvents("messages-error.sse"))).toEqual([
      role,
      chunk({ content: "Hel" }),
      { error: { message: "Overloaded", type: "overloaded_error", code: "overloaded_error" } },
    ]);
    expect(s.failed).toBe(true);
  });

  it("emits nothing after an error", () => {
    const s = make();
    run(s, messagesEvents("messages-error.sse"));
    expect(s.push(ev("message_stop", {}))).toEqual([]);
    expect(s.fail("api_error", "again")).toEqual([]);
  });

  it("sends an error chunk when the stream ends before message_delta", () => {
    const items = run(make(), messagesEvents("messages-cut.sse"));
    expect(items.at(-1)).toEqual({ error: { message: "upstream stream ended before message_delta", type: "upstream_unavailable", code: "upstream_unavailable" } });
  });

  it("completes the stream at EOF after message_delta when message_stop is missing", () => {
    const events = messagesEvents("messages-text.sse").slice(0, -1);
    expect(run(make({ includeUsage: true }), events).slice(-3)).toEqual([
      chunk({}, "stop"),
      { id: ID, object: "chat.completion.chunk", created: 1763800000, model: "claude-sonnet-4-5", choices: [], usage: usage(12, 0.000285) },
      "[DONE]",
    ]);
  });

  it("keeps message_start's input counts when message_delta omits them and overwrites output_tokens", () => {
    const s = make();
    run(s, messagesEvents("messages-text.sse"));
    expect(s.usage).toEqual({ input: 25, output: 12, cacheRead: 100, cacheWrite: 0 });
    expect(s.costNano).toBe(285_000);
  });

  it("takes input counts repeated in message_delta", () => {
    const s = started();
    s.push(ev("message_delta", { delta: { stop_reason: "end_turn" }, usage: { input_tokens: 40, cache_creation_input_tokens: 10, output_tokens: 5 } }));
    expect(s.usage).toEqual({ input: 40, output: 5, cacheRead: 100, cacheWrite: 10 });
  });

  it("shows its own estimate in the usage chunk and reports it as usage when the upstream sends no usage", () => {
    const events = messagesEvents("messages-text.sse");
    for (const { data } of events) {
      delete data.usage;
      delete (data.message as { usage?: unknown } | undefined)?.usage;
    }
    const s = make({ includeUsage: true });
    // "Hello" + "!" is 6 chars → ceil(6/4) = 2 output tokens; input is the reservation estimate.
    const estimate = { prompt_tokens: 2000, completion_tokens: 2, total_tokens: 2002, prompt_tokens_details: { cached_tokens: 0 }, cost_usd: 0.00603 };
    expect(run(s, events).slice(-2)).toEqual([{ id: ID, object: "chat.completion.chunk", created: 1763800000, model: "claude-sonnet-4-5", choices: [], usage: estimate }, "[DONE]"]);
    expect(s.usage).toEqual({ input: 2000, output: 2, cacheRead: 0, cacheWrite: 0 });
    expect(s.costNano).toBe(6_030_000);
  });

  it("reports cache writes as prompt_tokens_details.cache_write_tokens", () => {
    const s = started();
    const [finish] = s.push(ev("message_delta", { delta: { stop_reason: "end_turn" }, usage: { cache_creation_input_tokens: 10, output_tokens: 5 } })) as ChatChunk[];
    expect(finish!.usage).toMatchObject({ prompt_tokens: 135, prompt_tokens_details: { cached_tokens: 100, cache_write_tokens: 10 } });
  });

  it("maps stop reasons to finish reasons", () => {
    const finishOf = (stop: string | null) => {
      const [c] = started().push(ev("message_delta", { delta: { stop_reason: stop }, usage: { output_tokens: 1 } })) as ChatChunk[];
      return c!.choices[0]!.finish_reason;
    };
    expect(["end_turn", "stop_sequence", "pause_turn", "max_tokens", "model_context_window_exceeded", "tool_use", "refusal", "new_reason", null].map(finishOf)).toEqual([
      "stop",
      "stop",
      "stop",
      "length",
      "length",
      "tool_calls",
      "content_filter",
      "stop",
      "stop",
    ]);
  });

  it("decodes tool ids the gateway encoded on the way to Anthropic", () => {
    const s = started();
    const [c] = s.push(ev("content_block_start", { index: 0, content_block: { type: "tool_use", id: toolIdToMessages("functions.Bash:0"), name: "Bash", input: {} } })) as ChatChunk[];
    expect(c!.choices[0]!.delta.tool_calls![0]!.id).toBe("functions.Bash:0");
  });

  it("emits nothing for ping, text block start, block stop and unknown events", () => {
    const s = started();
    expect(s.push(ev("ping", {}))).toEqual([]);
    expect(s.push(ev("content_block_start", { index: 0, content_block: { type: "text", text: "" } }))).toEqual([]);
    expect(s.push(ev("content_block_stop", { index: 0 }))).toEqual([]);
    expect(s.push(ev("brand_new_event", {}))).toEqual([]);
  });

  it("derives the chunk id from the message id", () => {
    const [first] = make().push(ev("message_start", { message: { id: "msg_abc", usage: { input_tokens: 1, output_tokens: 1 } } })) as ChatChunk[];
    expect(first!.id).toBe("chatcmpl-abc");
  });

  it("counts text, thinking and tool argument characters in outputChars", () => {
    const s = make();
    run(s, messagesEvents("messages-tools.sse"));
    expect(s.outputChars).toBe("Checking both.".length + '{"city": "Oslo"}'.length);
  });
});
