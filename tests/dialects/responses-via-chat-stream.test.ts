import { describe, expect, it } from "bun:test";
import { APIError } from "openai";
import type { TokenUsage } from "../../src/core/money.ts";
import { responsesRequestToChat } from "../../src/dialects/responses-via-chat/request.ts";
import { ResponsesViaChatStream } from "../../src/dialects/responses-via-chat/stream.ts";
import type { ResponsesEvent, ResponsesRequest, ToolNameMap } from "../../src/dialects/responses-via-chat/types.ts";
import type { ChatChunk, JsonObject } from "../../src/wire/shapes.ts";
import { chatChunks, fixtureJson, fixtureText } from "../support/fixtures.ts";
import { codexRead, normalize, sdkClient, sseResponse } from "../support/responses.ts";
import { toSse } from "../support/sse.ts";

const FIXED = { responseId: "resp_0123456789abcdef0123456789abcdef0123456789abcdef", createdAt: 1763798400 };
const ESTIMATED_INPUT = 2000;
const costOf = (u: TokenUsage) => u.input * 2 + u.cacheRead + u.output * 10;

function stream(request: JsonObject = { model: "gw-mini", input: "Hi!", stream: true }, toolNames: ToolNameMap = new Map()) {
  return new ResponsesViaChatStream({ model: "gw-mini", request: request as ResponsesRequest, toolNames, costOf, estimatedInputTokens: ESTIMATED_INPUT, ...FIXED });
}

function run(s: ResponsesViaChatStream, chunks: ChatChunk[], end = true): ResponsesEvent[] {
  const events = s.start();
  for (const c of chunks) events.push(...s.push(c));
  if (end) events.push(...s.done());
  return events;
}

const chunk = (delta: JsonObject, finish: string | null = null): ChatChunk =>
  ({ id: "c", object: "chat.completion.chunk", created: 1, model: "up", choices: [{ index: 0, delta, finish_reason: finish }] }) as ChatChunk;
const usageChunk = (prompt = 10, completion = 3): ChatChunk =>
  ({ id: "c", object: "chat.completion.chunk", created: 1, model: "up", choices: [], usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } }) as ChatChunk;
const call = (index: number | undefined, fields: JsonObject) => chunk({ tool_calls: [{ ...(index === undefined ? {} : { index }), ...fields }] });
const types = (events: ResponsesEvent[]) => events.map((e) => e.event);
const last = (events: ResponsesEvent[]) => events.at(-1)!.data as JsonObject & { response: JsonObject & { output: JsonObject[] } };

async function codexSetup() {
  const request = await fixtureJson<ResponsesRequest>("responses/codex-request.json");
  const { toolNames } = responsesRequestToChat(request, { upstreamModel: "up", defaultMaxOutputTokens: 64000 });
  return { request, toolNames };
}

describe("event sequence", () => {
  it("turns a recorded text stream into OpenAI's recorded event sequence", async () => {
    const events = run(stream(), await chatChunks("responses/text.chat.sse"));
    expect(toSse(normalize(events))).toBe(await fixtureText("responses/text.responses.sse"));
  });

  it("turns a Codex tool-call stream into reasoning, message and function_call items", async () => {
    const { request, toolNames } = await codexSetup();
    const s = new ResponsesViaChatStream({ model: "gw-coder", request, toolNames, costOf, estimatedInputTokens: ESTIMATED_INPUT, ...FIXED });
    const events = run(s, await chatChunks("responses/codex-tools.chat.sse"));
    expect(toSse(normalize(events))).toBe(await fixtureText("responses/codex-tools.responses.sse"));
  });

  it("numbers events from 0 up by one and names each by its type", async () => {
    const events = run(stream(), await chatChunks("responses/text.chat.sse"));
    expect(events.map((e) => e.data.sequence_number)).toEqual(events.map((_, i) => i));
    for (const e of events) expect(e.event).toBe(e.data.type as string);
  });

  it("starts by itself if push comes first", () => {
    const s = stream();
    expect(types(s.push(chunk({ content: "a" }))).slice(0, 2)).toEqual(["response.created", "response.in_progress"]);
    expect(s.start()).toEqual([]);
  });

  it("sends nothing after the terminal event", async () => {
    const s = stream();
    run(s, await chatChunks("responses/text.chat.sse"));
    expect([s.push(chunk({ content: "late" })), s.done(), s.fail("x", "y")]).toEqual([[], [], []]);
  });
});

describe("Codex reads it", () => {
  it("gets every item from output_item.done, namespaced calls with their namespace", async () => {
    const { request, toolNames } = await codexSetup();
    const turn = codexRead(run(new ResponsesViaChatStream({ model: "gw-coder", request, toolNames, costOf, estimatedInputTokens: ESTIMATED_INPUT }), await chatChunks("responses/codex-tools.chat.sse")));
    expect(turn.problems).toEqual([]);
    expect(turn.outcome).toBe("completed");
    expect(turn.items.map((i) => [i.type, i.name ?? null, i.namespace ?? null])).toEqual([
      ["reasoning", null, null],
      ["message", null, null],
      ["function_call", "exec_command", null],
      ["function_call", "close_agent", "multi_agent_v1"],
    ]);
  });

  it("sees a length stop as response.incomplete with reason max_output_tokens", () => {
    const events = run(stream(), [chunk({ content: "cut" }), chunk({}, "length"), usageChunk()]);
    const turn = codexRead(events);
    expect([turn.outcome, turn.incompleteReason]).toEqual(["incomplete", "max_output_tokens"]);
    expect(last(events).response.output[0]!.status).toBe("incomplete");
  });

  it("reads a failure from response.failed with its code", () => {
    const s = stream();
    const events = [...run(s, [chunk({ content: "part" })], false), ...s.fail("rate_limit_exceeded", "Rate limit reached. Please try again in 2s.")];
    expect(types(events).slice(-2)).toEqual(["error", "response.failed"]);
    expect(codexRead(events).error).toEqual({ code: "rate_limit_exceeded", message: "Rate limit reached. Please try again in 2s." });
    expect(s.status).toBe("failed");
  });

  it("never receives output_item.done for a call cut by a failure", () => {
    const s = stream();
    const events = [...run(s, [call(0, { id: "c1", function: { name: "f", arguments: '{"a":' } })], false), ...s.fail("upstream_unavailable", "gone")];
    expect(types(events)).not.toContain("response.output_item.done");
    expect(last(events).response.output[0]).toMatchObject({ type: "function_call", status: "incomplete" });
  });
});

describe("usage and cost", () => {
  it("prices the uncached input, cache reads and output, and shows cost_usd in response.completed", async () => {
    const seen: TokenUsage[] = [];
    const s = new ResponsesViaChatStream({ model: "m", request: { input: "x" }, toolNames: new Map(), costOf: (u) => (seen.push(u), 1_234_567), estimatedInputTokens: ESTIMATED_INPUT });
    const events = run(s, await chatChunks("responses/text.chat.sse"));
    expect(seen).toEqual([{ input: 86, output: 9, cacheRead: 1920, cacheWrite: 0, serviceTier: "default" }]);
    expect((last(events).response.usage as JsonObject).cost_usd).toBe(0.001234567);
    expect(s.usage).toEqual({ input: 86, output: 9, cacheRead: 1920, cacheWrite: 0, serviceTier: "default" });
    expect(s.status).toBe("completed");
  });

  it("waits for the usage chunk after the finish", () => {
    const s = stream();
    const events = run(s, [chunk({ content: "a" }), chunk({}, "stop")], false);
    expect(types(events)).not.toContain("response.completed");
    expect(types(s.push(usageChunk()))).toEqual(["response.completed"]);
  });

  it("ends at once when usage rides on the finish chunk", () => {
    const s = stream();
    const finishWithUsage = { ...chunk({}, "stop"), usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } } as ChatChunk;
    expect(types(run(s, [chunk({ content: "a" }), finishWithUsage], false)).at(-1)).toBe("response.completed");
  });

  it("does not end on a running usage count sent before the finish", () => {
    const running = { ...chunk({ content: "a" }), usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } } as ChatChunk;
    expect(types(run(stream(), [running], false))).not.toContain("response.completed");
  });

  it("completes with its own estimate as usage, and reports it, when the upstream finished without usage", () => {
    const s = stream();
    const events = run(s, [chunk({ reasoning_content: "hm" }), chunk({ content: "hello" }), call(0, { id: "a", function: { name: "f", arguments: "{}" } }), chunk({}, "stop")]);
    // 2 + 5 + 2 characters → ceil(9/4) = 3 output tokens; input is the reservation estimate.
    expect(last(events).response.usage).toEqual({
      input_tokens: ESTIMATED_INPUT,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 3,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: ESTIMATED_INPUT + 3,
      cost_usd: 0.00000403, // 2000 × 2 + 3 × 10 nano-dollars
    });
    expect(s.usage).toEqual({ input: ESTIMATED_INPUT, output: 3, cacheRead: 0, cacheWrite: 0 });
    expect(s.outputChars).toBe(9);
  });

  it("reports no usage for a stream that failed without usage", () => {
    const s = stream();
    run(s, [chunk({ content: "a" })]);
    expect(s.usage).toBeNull();
  });

  it("fails when the upstream ends with neither a finish nor usage", () => {
    const events = run(stream(), [chunk({ content: "a" })]);
    expect(types(events).slice(-2)).toEqual(["error", "response.failed"]);
    expect((last(events).response.error as JsonObject).code).toBe("upstream_unavailable");
  });

  it("fails on an upstream error chunk", () => {
    const events = run(stream(), [chunk({ content: "a" }), { error: { message: "overloaded", code: "server_is_overloaded" } } as unknown as ChatChunk]);
    expect(last(events).response.error).toEqual({ code: "server_is_overloaded", message: "overloaded" });
  });
});

describe("tool calls", () => {
  it("keeps interleaved fragments of parallel calls apart", () => {
    const events = run(stream(), [
      call(0, { id: "a", type: "function", function: { name: "f", arguments: '{"x":' } }),
      call(1, { id: "b", type: "function", function: { name: "g", arguments: '{"y":' } }),
      call(0, { function: { arguments: "1}" } }),
      call(1, { function: { arguments: "2}" } }),
      chunk({}, "tool_calls"),
      usageChunk(),
    ]);
    expect(last(events).response.output.map((i) => [i.call_id, i.name, i.arguments])).toEqual([
      ["a", "f", '{"x":1}'],
      ["b", "g", '{"y":2}'],
    ]);
  });

  it("takes whole calls from servers that send no index", () => {
    const events = run(stream(), [
      chunk({ tool_calls: [{ id: "a", type: "function", function: { name: "f", arguments: "{}" } }, { id: "b", type: "function", function: { name: "g", arguments: "{}" } }] }),
      chunk({}, "tool_calls"),
      usageChunk(),
    ]);
    expect(last(events).response.output.map((i) => i.call_id)).toEqual(["a", "b"]);
  });

  it("closes the message before a call opens, and answers empty arguments with {}", () => {
    const events = run(stream(), [chunk({ content: "Let me check." }), call(0, { id: "a", function: { name: "f", arguments: "" } }), chunk({}, "tool_calls"), usageChunk()]);
    const doneMessage = types(events).indexOf("response.output_item.done");
    expect(doneMessage).toBeLessThan(types(events).indexOf("response.function_call_arguments.done"));
    expect(last(events).response.output[1]!.arguments).toBe("{}");
  });

  it("streams a custom tool's call as custom_tool_call with its unwrapped input", () => {
    const toolNames: ToolNameMap = new Map([["apply_patch", { name: "apply_patch", kind: "custom" as const }]]);
    const events = run(stream(undefined, toolNames), [call(0, { id: "p", function: { name: "apply_patch", arguments: '{"input":"*** Begin' } }), call(0, { function: { arguments: ' Patch"}' } }), chunk({}, "tool_calls"), usageChunk()]);
    expect(types(events)).toContain("response.custom_tool_call_input.done");
    expect(types(events)).not.toContain("response.function_call_arguments.delta");
    expect(last(events).response.output[0]).toMatchObject({ type: "custom_tool_call", call_id: "p", input: "*** Begin Patch" });
  });
});

describe("the openai SDK stream helper reads it", () => {
  async function helperFinal(events: ResponsesEvent[], params: JsonObject = { model: "gw-mini", input: "Hi!" }) {
    const { client } = sdkClient(() => sseResponse(events));
    const s = client.responses.stream(params as never);
    const seen: string[] = [];
    for await (const e of s) seen.push(e.type);
    return { final: await s.finalResponse(), seen };
  }

  it("accepts the text stream and builds output_text", async () => {
    const events = run(stream(), await chatChunks("responses/text.chat.sse"));
    const { final, seen } = await helperFinal(events);
    expect(seen).toEqual(types(events));
    expect(final.output_text).toBe("Hello! How can I help?");
    expect((final.usage as unknown as JsonObject).cost_usd).toBe(0.000002182);
  });

  it("accepts the Codex tool stream with its namespace tools", async () => {
    const { request, toolNames } = await codexSetup();
    const events = run(new ResponsesViaChatStream({ model: "gw-coder", request, toolNames, costOf, estimatedInputTokens: ESTIMATED_INPUT }), await chatChunks("responses/codex-tools.chat.sse"));
    const { final } = await helperFinal(events, { ...request, stream: undefined });
    expect(final.output).toMatchObject(last(events).response.output as never);
  });

  it("accepts refusal, reasoning and length-cut streams", async () => {
    for (const chunks of [
      [chunk({ refusal: "I can't" }), chunk({ refusal: " help." }), chunk({}, "stop"), usageChunk()],
      [chunk({ reasoning_content: "hmm" }), chunk({ content: "ok" }), chunk({ reasoning: "more" }), chunk({}, "stop"), usageChunk()],
      [chunk({ content: "cut" }), call(0, { id: "a", function: { name: "f", arguments: "{" } }), chunk({}, "length"), usageChunk()],
    ]) {
      const events = run(stream(), chunks);
      const { final } = await helperFinal(events);
      expect(final.output).toMatchObject(last(events).response.output as never);
    }
  });

  it("throws the error event of a failed stream as an APIError", async () => {
    const s = stream();
    const events = [...run(s, [chunk({ content: "par" })], false), ...s.fail("upstream_unavailable", "The upstream went away.")];
    const { client } = sdkClient(() => sseResponse(events));
    const raw = await client.responses.create({ model: "gw-mini", input: "Hi!", stream: true });
    const read = async () => {
      for await (const _ of raw);
    };
    await expect(read()).rejects.toBeInstanceOf(APIError);
    await expect(helperFinal(events)).rejects.toThrow("The upstream went away.");
  });
});
