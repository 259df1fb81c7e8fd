import { describe, expect, it } from "bun:test";
import { MessagesViaChatStream, type MessagesViaChatStreamOptions } from "../../src/dialects/messages-via-chat-stream.ts";
import { toolIdFromMessages } from "../../src/dialects/tool-ids.ts";
import type { ChatChunk, MessagesEvent } from "../../src/wire/shapes.ts";
import { chatItems, costOf } from "./stream-fixtures.ts";

const make = (o: Partial<MessagesViaChatStreamOptions> = {}) =>
  new MessagesViaChatStream({ model: "gpt-4o-mini", estimatedInputTokens: 2000, costOf, ...o });

/** Feeds parsed chunks; "[DONE]" calls done(), as the route does at the terminator or at EOF. */
function run(s: MessagesViaChatStream, items: (ChatChunk | "[DONE]")[]): MessagesEvent[] {
  return items.flatMap((it) => (it === "[DONE]" ? s.done() : s.push(it)));
}

let n = 0;
const chunk = (delta: ChatChunk["choices"][number]["delta"], finish: string | null = null, extra: Partial<ChatChunk> = {}): ChatChunk => ({
  id: "chatcmpl-T1",
  object: "chat.completion.chunk",
  created: 1763800000 + n++,
  model: "gpt-4o-mini-2024-07-18",
  choices: [{ index: 0, delta, finish_reason: finish }],
  ...extra,
});
const usageChunk = (prompt: number, completion: number): ChatChunk => ({
  ...chunk({}),
  choices: [],
  usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
});

const names = (evs: MessagesEvent[]) => evs.map((e) => e.event);
/** message_start's usage: every field of the SDK's Usage, the cache split and what the upstream did not say null. */
const startUsage = (input: number, serviceTier: string | null = null, speed: string | null = serviceTier && "standard") => ({
  input_tokens: input,
  output_tokens: 0,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
  cache_creation: null,
  server_tool_use: null,
  output_tokens_details: null,
  inference_geo: null,
  service_tier: serviceTier,
  speed,
});
const start = (id = "msg_B9xT1", input = 2000): MessagesEvent => ({
  event: "message_start",
  data: {
    type: "message_start",
    message: { id, type: "message", role: "assistant", model: "gpt-4o-mini", content: [], stop_reason: null, stop_sequence: null, stop_details: null, usage: startUsage(input) },
  },
});
const blockStart = (index: number, content_block: object): MessagesEvent => ({ event: "content_block_start", data: { type: "content_block_start", index, content_block } });
const blockDelta = (index: number, delta: object): MessagesEvent => ({ event: "content_block_delta", data: { type: "content_block_delta", index, delta } });
const blockStop = (index: number): MessagesEvent => ({ event: "content_block_stop", data: { type: "content_block_stop", index } });
/** The SDK's MessageDeltaUsage: what `usage` leaves out is null. */
const messageDelta = (stop_reason: string, usage: object): MessagesEvent => ({
  event: "message_delta",
  data: { type: "message_delta", delta: { stop_reason, stop_sequence: null, stop_details: null }, usage: { server_tool_use: null, output_tokens_details: null, ...usage } },
});
const messageStop: MessagesEvent = { event: "message_stop", data: { type: "message_stop" } };

describe("MessagesViaChatStream", () => {
  it("translates a text stream into the exact Messages event sequence", () => {
    expect(run(make(), chatItems("chat-text.sse"))).toEqual([
      start(),
      blockStart(0, { type: "text", text: "" }),
      blockDelta(0, { type: "text_delta", text: "Hello" }),
      blockDelta(0, { type: "text_delta", text: " world" }),
      blockStop(0),
      messageDelta("end_turn", {
        input_tokens: 86,
        output_tokens: 3,
        cache_read_input_tokens: 1920,
        cache_creation_input_tokens: 0,
        output_tokens_details: { thinking_tokens: 0 },
        cost_usd: 0.000879,
      }),
      messageStop,
    ]);
  });

  it("translates two streamed tool calls into two tool_use blocks with input_json_delta fragments", () => {
    expect(run(make(), chatItems("chat-tools.sse"))).toEqual([
      start(),
      blockStart(0, { type: "text", text: "" }),
      blockDelta(0, { type: "text_delta", text: "Checking both." }),
      blockStop(0),
      blockStart(1, { type: "tool_use", id: "call_Wx1", name: "get_weather", input: {} }),
      blockDelta(1, { type: "input_json_delta", partial_json: '{"city"' }),
      blockDelta(1, { type: "input_json_delta", partial_json: ':"Oslo"}' }),
      blockStop(1),
      blockStart(2, { type: "tool_use", id: "call_Tz2", name: "get_time", input: {} }),
      blockDelta(2, { type: "input_json_delta", partial_json: '{"tz":' }),
      blockDelta(2, { type: "input_json_delta", partial_json: '"CET"}' }),
      blockStop(2),
      messageDelta("tool_use", { input_tokens: 120, output_tokens: 40, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, cost_usd: 0.00096 }),
      messageStop,
    ]);
  });

  it("translates reasoning_content into a thinking block before the text block", () => {
    expect(run(make(), chatItems("chat-thinking.sse"))).toEqual([
      start(),
      blockStart(0, { type: "thinking", thinking: "", signature: "" }),
      blockDelta(0, { type: "thinking_delta", thinking: "The user wants" }),
      blockDelta(0, { type: "thinking_delta", thinking: " a greeting." }),
      blockStop(0),
      blockStart(1, { type: "text", text: "" }),
      blockDelta(1, { type: "text_delta", text: "Hi!" }),
      blockStop(1),
      messageDelta("end_turn", {
        input_tokens: 30,
        output_tokens: 12,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 0,
        output_tokens_details: { thinking_tokens: 9 },
        cost_usd: 0.00027,
      }),
      messageStop,
    ]);
  });

  it("reads the reasoning field as thinking too", () => {
    const evs = make().push(chunk({ reasoning: "hmm" }));
    expect(evs.slice(1)).toEqual([blockStart(0, { type: "thinking", thinking: "", signature: "" }), blockDelta(0, { type: "thinking_delta", thinking: "hmm" })]);
  });

  it("turns an error chunk into an error event with no message_stop", () => {
    const s = make();
    const evs = run(s, chatItems("chat-error.sse"));
    expect(evs.at(-1)).toEqual({
      event: "error",
      data: { type: "error", error: { type: "server_error", message: "The server had an error while processing your request. Sorry about that!" } },
    });
    expect(names(evs)).toEqual(["message_start", "content_block_start", "content_block_delta", "error"]);
    expect(s.failed).toBe(true);
    expect(s.finished).toBe(false);
  });

  it("emits nothing after an error", () => {
    const s = make();
    run(s, chatItems("chat-error.sse"));
    expect(s.push(chunk({ content: "more" }))).toEqual([]);
    expect(s.done()).toEqual([]);
    expect(s.fail("api_error", "again")).toEqual([]);
  });

  it("shows its own estimate in message_delta and reports it as usage when the upstream sends no usage", () => {
    const s = make();
    const evs = run(s, chatItems("chat-no-usage.sse"));
    // "Hello world" is 11 chars → ceil(11/4) = 3 output tokens; input repeats message_start's reservation estimate.
    const usage = { input_tokens: 2000, output_tokens: 3, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, cost_usd: 0.006045 };
    expect(evs.slice(-2)).toEqual([messageDelta("max_tokens", usage), messageStop]);
    expect(s.usage).toEqual({ input: 2000, output: 3, cacheRead: 0, cacheWrite: 0 });
    expect(s.costNano).toBe(6_045_000);
  });

  it("reports no usage before the end of a stream without usage, so a cancel is billed by the relay", () => {
    const s = make();
    run(s, chatItems("chat-no-usage.sse").slice(0, 2));
    expect(s.usage).toBeNull();
  });

  it("puts the reservation estimate, content [], and null stop fields in message_start", () => {
    expect(make({ estimatedInputTokens: 1234 }).push(chunk({ role: "assistant", content: "" }))).toEqual([start("msg_T1", 1234)]);
  });

  // Anthropic's message_start names the tier and the speed; before, the translated one said neither.
  for (const [tier, serviceTier, speed] of [["priority", "priority", "standard"], ["default", "standard", "standard"], ["flex", "standard", "standard"], ["fast", "standard", "fast"]] as const) {
    it(`says service_tier "${serviceTier}" and speed "${speed}" in message_start for a first chunk of tier ${tier}`, () => {
      const [ev] = make().push(chunk({ role: "assistant", content: "" }, null, { service_tier: tier }));
      expect((ev!.data.message as { usage: object }).usage).toEqual(startUsage(2000, serviceTier, speed));
    });
  }

  it("uses the messageId option for the message id", () => {
    const ev = make({ messageId: "msg_fixed" }).push(chunk({ role: "assistant" }))[0]!;
    expect((ev.data.message as { id: string }).id).toBe("msg_fixed");
  });

  it("opens no block for a role-only or empty delta", () => {
    const s = make();
    expect(names(s.push(chunk({ role: "assistant", content: "" })))).toEqual(["message_start"]);
    expect(s.push(chunk({ content: "" }))).toEqual([]);
    expect(s.push(chunk({}))).toEqual([]);
  });

  it("emits the content before the finish when one chunk carries both", () => {
    const s = make();
    s.push(chunk({ role: "assistant" }));
    expect(s.push(chunk({ content: "Bye" }, "stop"))).toEqual([
      blockStart(0, { type: "text", text: "" }),
      blockDelta(0, { type: "text_delta", text: "Bye" }),
      blockStop(0),
    ]);
  });

  it("holds the stop_reason until the usage chunk arrives", () => {
    const s = make();
    run(s, [chunk({ content: "a" })]);
    expect(names(s.push(chunk({}, "stop")))).toEqual(["content_block_stop"]);
    expect(names(s.push(usageChunk(10, 1)))).toEqual(["message_delta", "message_stop"]);
  });

  it("ignores everything after the usage chunk", () => {
    const s = make();
    run(s, [chunk({ content: "a" }, "stop"), usageChunk(10, 1)]);
    expect(s.push(chunk({ content: "late" }))).toEqual([]);
    expect(s.done()).toEqual([]);
    expect(s.finished).toBe(true);
  });

  it("takes usage carried on the finish chunk, ending at [DONE]", () => {
    const s = make();
    const finish = chunk({}, "stop", { usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 } });
    expect(names(run(s, [chunk({ content: "a" }), finish]))).toEqual(["message_start", "content_block_start", "content_block_delta", "content_block_stop"]);
    expect(s.done()[0]).toEqual(messageDelta("end_turn", { input_tokens: 10, output_tokens: 2, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, cost_usd: 0.00006 }));
  });

  it("sends an error event when the stream ends before a finish_reason", () => {
    const s = make();
    const evs = run(s, [chunk({ content: "cut" }), "[DONE]"]);
    expect(evs.at(-1)).toEqual({ event: "error", data: { type: "error", error: { type: "upstream_unavailable", message: "upstream stream ended before a finish_reason" } } });
    expect(s.outputChars).toBe(3);
  });

  it("maps finish reasons to stop reasons", () => {
    const stopOf = (finish: string) => {
      const evs = run(make(), [chunk({ content: "x" }, finish), usageChunk(1, 1)]);
      return (evs.at(-2)!.data.delta as { stop_reason: string }).stop_reason;
    };
    expect(["stop", "length", "tool_calls", "function_call", "content_filter", "weird"].map(stopOf)).toEqual([
      "end_turn",
      "max_tokens",
      "tool_use",
      "tool_use",
      "refusal",
      "end_turn",
    ]);
  });

  it("streams a refusal as text and ends with stop_reason refusal", () => {
    const evs = run(make(), [chunk({ refusal: "I can't help with that." }), chunk({}, "stop"), usageChunk(5, 5)]);
    expect(evs[2]).toEqual(blockDelta(0, { type: "text_delta", text: "I can't help with that." }));
    expect((evs.at(-2)!.data.delta as { stop_reason: string }).stop_reason).toBe("refusal");
  });

  it("generates a tool id from the message id when the upstream sends none", () => {
    const evs = make().push(chunk({ tool_calls: [{ index: 0, function: { name: "ls", arguments: "{}" } }] }));
    expect(evs[1]).toEqual(blockStart(0, { type: "tool_use", id: "toolu_gw0_T1", name: "ls", input: {} }));
  });

  it("encodes a tool id Anthropic would reject, reversibly", () => {
    const evs = make().push(chunk({ tool_calls: [{ index: 0, id: "functions.Bash:0", function: { name: "Bash", arguments: "" } }] }));
    const id = (evs[1]!.data.content_block as { id: string }).id;
    expect(id).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(toolIdFromMessages(id)).toBe("functions.Bash:0");
  });

  it("starts a tool block only once its name arrives, with the arguments received before it", () => {
    const s = make();
    expect(names(s.push(chunk({ tool_calls: [{ index: 0, id: "call_1", function: { arguments: '{"a":' } }] })))).toEqual(["message_start"]);
    expect(s.push(chunk({ tool_calls: [{ index: 0, function: { name: "f", arguments: "1}" } }] }))).toEqual([
      blockStart(0, { type: "tool_use", id: "call_1", name: "f", input: {} }),
      blockDelta(0, { type: "input_json_delta", partial_json: '{"a":1}' }),
    ]);
  });

  it("treats a new id at an already used index as a new tool call", () => {
    const s = make();
    s.push(chunk({ tool_calls: [{ index: 0, id: "call_1", function: { name: "f", arguments: "{}" } }] }));
    expect(s.push(chunk({ tool_calls: [{ index: 0, id: "call_2", function: { name: "g", arguments: "{}" } }] }))).toEqual([
      blockStop(0),
      blockStart(1, { type: "tool_use", id: "call_2", name: "g", input: {} }),
      blockDelta(1, { type: "input_json_delta", partial_json: "{}" }),
    ]);
  });

  it("keys tool fragments by id when the upstream sends no index", () => {
    const s = make();
    s.push(chunk({ tool_calls: [{ id: "call_1", function: { name: "f", arguments: "" } }] }));
    expect(s.push(chunk({ tool_calls: [{ id: "call_1", function: { arguments: "{}" } }] }))).toEqual([blockDelta(0, { type: "input_json_delta", partial_json: "{}" })]);
  });

  // translation.md §4: blocks cannot reopen, so a call that starts while the open call's arguments
  // are still incomplete waits in a buffer and gets its block once the open one is whole.
  it("keeps interleaved argument fragments of parallel calls with their own tool blocks", () => {
    const s = make();
    const evs = run(s, [
      chunk({ tool_calls: [{ index: 0, id: "call_1", function: { name: "f", arguments: '{"a":' } }] }),
      chunk({ tool_calls: [{ index: 1, id: "call_2", function: { name: "g", arguments: '{"b":' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: "1}" } }] }),
      chunk({ tool_calls: [{ index: 1, function: { arguments: "2}" } }] }),
      chunk({}, "tool_calls"),
      usageChunk(10, 5),
    ]);
    expect(evs.slice(1, -2)).toEqual([
      blockStart(0, { type: "tool_use", id: "call_1", name: "f", input: {} }),
      blockDelta(0, { type: "input_json_delta", partial_json: '{"a":' }),
      blockDelta(0, { type: "input_json_delta", partial_json: "1}" }),
      blockStop(0),
      blockStart(1, { type: "tool_use", id: "call_2", name: "g", input: {} }),
      blockDelta(1, { type: "input_json_delta", partial_json: '{"b":' }),
      blockDelta(1, { type: "input_json_delta", partial_json: "2}" }),
      blockStop(1),
    ]);
  });

  it("fails the stream when arguments arrive for a tool block that text already closed", () => {
    const s = make();
    s.push(chunk({ tool_calls: [{ index: 0, id: "call_1", function: { name: "f", arguments: "{" } }] }));
    s.push(chunk({ content: "meanwhile" }));
    const evs = s.push(chunk({ tool_calls: [{ index: 0, function: { arguments: "}" } }] }));
    expect(names(evs)).toEqual(["error"]);
    expect(s.failed).toBe(true);
  });

  it("counts text, thinking and tool argument characters in outputChars", () => {
    const s = make();
    run(s, chatItems("chat-tools.sse"));
    expect(s.outputChars).toBe("Checking both.".length + '{"city":"Oslo"}'.length + '{"tz":"CET"}'.length);
  });
});
