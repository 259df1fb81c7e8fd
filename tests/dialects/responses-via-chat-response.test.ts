import { describe, expect, it } from "bun:test";
import { responsesRequestToChat } from "../../src/dialects/responses-via-chat/request.ts";
import { chatResponseToResponses } from "../../src/dialects/responses-via-chat/response.ts";
import type { ResponsesRequest, ToolNameMap } from "../../src/dialects/responses-via-chat/types.ts";
import type { ChatResponse, JsonObject } from "../../src/wire/shapes.ts";
import { usageFromChat as tokenUsageFromChat } from "../../src/dialects/usage.ts";
import { fixtureJson } from "../support/fixtures.ts";
import { jsonResponse, normalize, sdkClient } from "../support/responses.ts";

const NO_TOOLS: ToolNameMap = new Map();

function chat(message: JsonObject, finish = "stop", usage: JsonObject | null = { prompt_tokens: 20, completion_tokens: 5, total_tokens: 25 }): ChatResponse {
  const body: JsonObject = { id: "chatcmpl-1", object: "chat.completion", created: 1763798400, model: "up", choices: [{ index: 0, message: { role: "assistant", ...message }, finish_reason: finish, logprobs: null }] };
  if (usage) body.usage = usage;
  return body as ChatResponse;
}

const convert = (c: ChatResponse, request: JsonObject = { model: "gw", input: "hi" }, toolNames = NO_TOOLS) =>
  chatResponseToResponses(c, { model: "gw-mini", request: request as ResponsesRequest, toolNames, costUsd: 0.00042 }) as JsonObject & { output: JsonObject[]; usage: JsonObject };

describe("response object", () => {
  it("answers text as a message item with an output_text part", () => {
    const r = convert(chat({ content: "Hello!" }));
    expect(r.id).toMatch(/^resp_[0-9a-f]{48}$/);
    expect([r.object, r.status, r.error, r.incomplete_details, r.model]).toEqual(["response", "completed", null, null, "gw-mini"]);
    expect(r.output).toHaveLength(1);
    expect(r.output[0]).toMatchObject({ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "Hello!", annotations: [], logprobs: [] }] });
    expect(r.output[0]!.id).toMatch(/^msg_/);
  });

  it("uses the given response id", () => {
    expect(chatResponseToResponses(chat({ content: "x" }), { model: "m", request: { input: "x" }, toolNames: NO_TOOLS, costUsd: 0, responseId: "resp_abc" }).id).toBe("resp_abc");
  });

  it("reports usage with details and cost_usd", () => {
    const r = convert(chat({ content: "x" }, "stop", { prompt_tokens: 2006, completion_tokens: 300, total_tokens: 2306, prompt_tokens_details: { cached_tokens: 1920 }, completion_tokens_details: { reasoning_tokens: 256 } }));
    expect(r.usage).toEqual({ input_tokens: 2006, input_tokens_details: { cached_tokens: 1920 }, output_tokens: 300, output_tokens_details: { reasoning_tokens: 256 }, total_tokens: 2306, cost_usd: 0.00042 });
  });

  it("always sends both detail objects, with zeros when the upstream had none", () => {
    const r = convert(chat({ content: "x" }));
    expect([r.usage.input_tokens_details, r.usage.output_tokens_details]).toEqual([{ cached_tokens: 0 }, { reasoning_tokens: 0 }]);
  });

  it("makes up no usage when the upstream sent none", () => {
    expect(convert(chat({ content: "x" }, "stop", null)).usage).toBeNull();
  });

  it("echoes the request's settings with OpenAI's defaults", () => {
    const request = { model: "gw", input: "x", instructions: "Be brief.", temperature: 0.3, max_output_tokens: 800, metadata: { team: "a" }, tool_choice: "none", parallel_tool_calls: false, text: { format: { type: "json_object" } }, store: false };
    const r = convert(chat({ content: "{}" }), request);
    expect(r).toMatchObject({ instructions: "Be brief.", temperature: 0.3, top_p: 1, max_output_tokens: 800, metadata: { team: "a" }, tool_choice: "none", parallel_tool_calls: false, store: false, tools: [], previous_response_id: null, truncation: "disabled" });
    expect(r.text).toEqual({ format: { type: "json_object" }, verbosity: "medium" });
  });

  it("marks a length stop incomplete with reason max_output_tokens", () => {
    const r = convert(chat({ content: "A long ans" }, "length"));
    expect([r.status, r.incomplete_details]).toEqual(["incomplete", { reason: "max_output_tokens" }]);
    expect(r.output[0]!.status).toBe("incomplete");
  });

  it("marks a content_filter stop incomplete with reason content_filter", () => {
    expect(convert(chat({ content: "" }, "content_filter")).incomplete_details).toEqual({ reason: "content_filter" });
  });

  it("keeps a refusal as a refusal part", () => {
    expect(convert(chat({ content: null, refusal: "I can't help with that." })).output[0]!.content).toEqual([{ type: "refusal", refusal: "I can't help with that." }]);
  });

  it("puts upstream reasoning text first, as a reasoning item", () => {
    const r = convert(chat({ content: "42", reasoning_content: "6 × 7" }));
    expect(r.output.map((i) => i.type)).toEqual(["reasoning", "message"]);
    expect(r.output[0]).toMatchObject({ summary: [], content: [{ type: "reasoning_text", text: "6 × 7" }] });
    expect(r.output[0]!.id).toMatch(/^rs_/);
  });
});

describe("tool calls", () => {
  it("matches the recorded Codex fixture: namespaced calls come back with bare name and namespace", async () => {
    const request = await fixtureJson<ResponsesRequest>("responses/codex-request.json");
    request.stream = false;
    const { toolNames } = responsesRequestToChat(request, { upstreamModel: "up", defaultMaxOutputTokens: 64000 });
    const r = chatResponseToResponses(await fixtureJson<ChatResponse>("responses/codex-tools.chat.json"), { model: "gw-coder", request, toolNames, costUsd: 0.000006754 });
    expect(normalize(r)).toEqual(await fixtureJson("responses/codex-tools.responses.json"));
  });

  it("gives each call an fc_ id and keeps the upstream call id as call_id", () => {
    const r = convert(chat({ content: null, tool_calls: [{ id: "call_A", type: "function", function: { name: "f", arguments: '{"x":1}' } }] }, "tool_calls"));
    expect(r.output).toHaveLength(1);
    expect(r.output[0]).toMatchObject({ type: "function_call", status: "completed", call_id: "call_A", name: "f", arguments: '{"x":1}' });
    expect(r.output[0]!.id).toMatch(/^fc_/);
    expect("namespace" in r.output[0]!).toBe(false);
  });

  it("synthesizes missing and repeated call ids, and {} for empty arguments", () => {
    const r = convert(chat({ tool_calls: [{ type: "function", function: { name: "f", arguments: "" } }, { id: "c", function: { name: "f", arguments: "{}" } }, { id: "c", function: { name: "f", arguments: "{}" } }] }, "tool_calls"));
    const ids = r.output.map((i) => i.call_id as string);
    expect(ids[0]).toMatch(/^call_[0-9a-f]{24}$/);
    expect(ids[1]).toBe("c");
    expect(ids[2]).toMatch(/^call_[0-9a-f]{24}$/);
    expect(r.output[0]!.arguments).toBe("{}");
  });

  it("answers a call of a custom tool as a custom_tool_call with the unwrapped input", () => {
    const toolNames: ToolNameMap = new Map([["apply_patch", { name: "apply_patch", kind: "custom" as const }]]);
    const r = convert(chat({ tool_calls: [{ id: "c1", type: "function", function: { name: "apply_patch", arguments: '{"input":"*** Begin Patch\\n"}' } }] }, "tool_calls"), undefined, toolNames);
    expect(r.output[0]).toMatchObject({ type: "custom_tool_call", call_id: "c1", name: "apply_patch", input: "*** Begin Patch\n" });
    expect(r.output[0]!.id).toMatch(/^ctc_/);
  });
});

describe("usage buckets for the ledger", () => {
  it("takes cached (and cache-write) tokens out of the uncached input", () => {
    expect(tokenUsageFromChat({ prompt_tokens: 2006, completion_tokens: 300, total_tokens: 2306, prompt_tokens_details: { cached_tokens: 1920 } })).toEqual({ input: 86, output: 300, cacheRead: 1920, cacheWrite: 0 });
    expect(tokenUsageFromChat({ prompt_tokens: 100, completion_tokens: 1, total_tokens: 101, prompt_tokens_details: { cached_tokens: 30, cache_write_tokens: 50 } })).toEqual({ input: 20, output: 1, cacheRead: 30, cacheWrite: 50 });
  });

  it("never goes below zero", () => {
    expect(tokenUsageFromChat({ prompt_tokens: 10, completion_tokens: 0, total_tokens: 10, prompt_tokens_details: { cached_tokens: 12 } }).input).toBe(0);
  });
});

describe("the openai SDK reads it", () => {
  it("responses.create builds output_text and keeps cost_usd", async () => {
    const answer = convert(chat({ content: "Hello!" }));
    const { client } = sdkClient(() => jsonResponse(answer));
    const r = await client.responses.create({ model: "gw-mini", input: "hi" });
    expect(r.output_text).toBe("Hello!");
    expect((r.usage as unknown as JsonObject).cost_usd).toBe(0.00042);
  });

  it("responses.parse parses a json_schema answer and strict tool arguments", async () => {
    const format = { type: "json_schema" as const, name: "city", schema: { type: "object", properties: { name: { type: "string" } }, required: ["name"], additionalProperties: false }, strict: true };
    const tools = [{ type: "function" as const, name: "f", parameters: { type: "object", properties: { x: { type: "number" } }, required: ["x"], additionalProperties: false }, strict: true }];
    const request = { model: "gw", input: "x", text: { format }, tools };
    const answer = convert(chat({ content: '{"name":"Oslo"}', tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: '{"x":2}' } }] }, "tool_calls"), request);
    const { client } = sdkClient(() => jsonResponse(answer));
    const r = await client.responses.parse({ model: "gw", input: "x", text: { format }, tools });
    expect(r.output_parsed).toEqual({ name: "Oslo" });
    expect(r.output.find((i) => i.type === "function_call")).toMatchObject({ parsed_arguments: { x: 2 } });
  });
});
