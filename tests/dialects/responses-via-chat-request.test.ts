import { describe, expect, it } from "bun:test";
import { GatewayError } from "../../src/core/errors.ts";
import { responsesRequestToChat } from "../../src/dialects/responses-via-chat/request.ts";
import type { ResponsesRequest } from "../../src/dialects/responses-via-chat/types.ts";
import type { JsonObject } from "../../src/wire/shapes.ts";
import { fixtureJson } from "../support/fixtures.ts";

const OPTS = { upstreamModel: "up-model", defaultMaxOutputTokens: 32000 };
const translate = (req: JsonObject) => responsesRequestToChat({ model: "gw", ...req } as ResponsesRequest, OPTS);

/** The GatewayError a request is refused with. */
function refusal(req: JsonObject): GatewayError {
  try {
    translate(req);
  } catch (e) {
    if (e instanceof GatewayError) return e;
    throw e;
  }
  throw new Error("request was not refused");
}

const fn = (name: string, extra: JsonObject = {}) => ({ type: "function", name, parameters: { type: "object", properties: {} }, strict: false, ...extra });

describe("input", () => {
  it("takes a string input as one user message", () => {
    expect(translate({ input: "Hi" }).body.messages).toEqual([{ role: "user", content: "Hi" }]);
  });

  it("puts instructions first as a system message", () => {
    expect(translate({ input: "Hi", instructions: "Be brief." }).body.messages).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: "Hi" },
    ]);
  });

  it("maps message items with input_text parts, and a role without a type", () => {
    const { body } = translate({
      input: [
        { type: "message", role: "user", content: [{ type: "input_text", text: "a" }, { type: "input_text", text: "b" }] },
        { role: "assistant", content: [{ type: "output_text", text: "c" }] },
        { role: "user", content: "d" },
      ],
    });
    expect(body.messages).toEqual([
      { role: "user", content: "a\nb" },
      { role: "assistant", content: "c" },
      { role: "user", content: "d" },
    ]);
  });

  it("sends developer messages as system messages", () => {
    const { body } = translate({ input: [{ role: "developer", content: [{ type: "input_text", text: "rules" }] }, { role: "user", content: "go" }] });
    expect(body.messages[0]).toEqual({ role: "system", content: "rules" });
  });

  it("keeps an assistant refusal part as the chat refusal", () => {
    const { body } = translate({ input: [{ role: "user", content: "x" }, { role: "assistant", content: [{ type: "refusal", refusal: "No." }] }, { role: "user", content: "y" }] });
    expect(body.messages[1]).toEqual({ role: "assistant", content: "", refusal: "No." });
  });

  it("turns function_call and function_call_output items into tool_calls and tool messages", () => {
    const { body } = translate({
      tools: [fn("get_weather")],
      input: [
        { role: "user", content: "Weather in Oslo and Rome?" },
        { type: "function_call", call_id: "call_1", name: "get_weather", arguments: '{"city":"Oslo"}' },
        { type: "function_call", call_id: "call_2", name: "get_weather", arguments: '{"city":"Rome"}' },
        { type: "function_call_output", call_id: "call_1", output: "3°C" },
        { type: "function_call_output", call_id: "call_2", output: [{ type: "input_text", text: "21°C" }] },
      ],
    });
    expect(body.messages.slice(1)).toEqual([
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } },
          { id: "call_2", type: "function", function: { name: "get_weather", arguments: '{"city":"Rome"}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_1", content: "3°C" },
      { role: "tool", tool_call_id: "call_2", content: "21°C" },
    ]);
  });

  it("joins a call to the assistant text right before it", () => {
    const { body } = translate({
      input: [
        { role: "user", content: "go" },
        { role: "assistant", content: [{ type: "output_text", text: "Checking." }] },
        { type: "function_call", call_id: "c1", name: "f", arguments: "" },
      ],
    });
    expect(body.messages[1]).toEqual({ role: "assistant", content: "Checking.", tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }] });
  });

  it("accepts reasoning items and leaves them out", () => {
    const { body } = translate({
      input: [
        { role: "user", content: "go" },
        { type: "reasoning", summary: [{ type: "summary_text", text: "thinking" }], encrypted_content: "gAAA" },
        { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
        { type: "function_call_output", call_id: "c1", output: "ok" },
      ],
    });
    expect(body.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
  });

  it("refuses an image part with unsupported_content_type naming its position", () => {
    const e = refusal({
      input: [
        { role: "user", content: "a" },
        { role: "assistant", content: "b" },
        { role: "user", content: "c" },
        { role: "user", content: [{ type: "input_text", text: "look" }, { type: "input_image", image_url: "data:image/png;base64,AAAA" }] },
      ],
    });
    expect(e.code).toBe("unsupported_content_type");
    expect(e.status).toBe(400);
    expect(e.message).toStartWith("input[3].content[1]:");
  });

  it("refuses a file part and an image in a tool output the same way", () => {
    expect(refusal({ input: [{ role: "user", content: [{ type: "input_file", file_id: "file_1" }] }] }).message).toStartWith("input[0].content[0]:");
    const e = refusal({ input: [{ type: "function_call_output", call_id: "c", output: [{ type: "input_image", image_url: "data:," }] }] });
    expect([e.code, e.message.split(":")[0]]).toEqual(["unsupported_content_type", "input[0].output[0]"]);
  });

  it("refuses item_reference and hosted-tool items with the item's path", () => {
    expect(refusal({ input: [{ type: "item_reference", id: "msg_1" }] }).message).toStartWith("input[0].type:");
    expect(refusal({ input: [{ role: "user", content: "x" }, { type: "web_search_call", id: "ws_1" }] }).message).toStartWith("input[1].type:");
  });

  it("requires input", () => {
    expect(refusal({}).message).toBe("input: required");
  });
});

describe("server-side state", () => {
  it("refuses previous_response_id", () => {
    const e = refusal({ input: "x", previous_response_id: "resp_1" });
    expect([e.status, e.code]).toEqual([400, "invalid_request"]);
    expect(e.message).toStartWith("previous_response_id:");
  });

  it("refuses an explicit store:true and serves store:false or no store", () => {
    expect(refusal({ input: "x", store: true }).message).toStartWith("store:");
    expect(() => translate({ input: "x", store: false })).not.toThrow();
    expect(() => translate({ input: "x" })).not.toThrow();
  });

  it("refuses conversation, background, prompt and truncation:auto", () => {
    expect(refusal({ input: "x", conversation: "conv_1" }).message).toStartWith("conversation:");
    expect(refusal({ input: "x", background: true }).message).toStartWith("background:");
    expect(refusal({ input: "x", prompt: { id: "pmpt_1" } }).message).toStartWith("prompt:");
    expect(refusal({ input: "x", truncation: "auto" }).message).toStartWith("truncation:");
  });
});

describe("sampling and limits", () => {
  it("uses the catalog cap when max_output_tokens is absent", () => {
    expect(translate({ input: "x" }).body.max_completion_tokens).toBe(32000);
  });

  it("passes max_output_tokens as max_completion_tokens", () => {
    expect(translate({ input: "x", max_output_tokens: 500 }).body.max_completion_tokens).toBe(500);
  });

  it("refuses max_output_tokens below 16", () => {
    expect(refusal({ input: "x", max_output_tokens: 5 }).message).toStartWith("max_output_tokens:");
  });

  it("passes temperature and top_p, and leaves nulls out", () => {
    const { body } = translate({ input: "x", temperature: 0.2, top_p: null });
    expect(body.temperature).toBe(0.2);
    expect("top_p" in body).toBe(false);
  });

  it("sends the upstream model name", () => {
    expect(translate({ input: "x" }).body.model).toBe("up-model");
  });

  it("always asks for usage when streaming", () => {
    const { body } = translate({ input: "x", stream: true });
    expect([body.stream, body.stream_options]).toEqual([true, { include_usage: true }]);
    expect("stream_options" in translate({ input: "x" }).body).toBe(false);
  });

  it("maps reasoning.effort, text.verbosity and output logprobs", () => {
    const { body } = translate({ input: "x", reasoning: { effort: "high", summary: "auto" }, text: { verbosity: "low" }, include: ["message.output_text.logprobs"], top_logprobs: 3 });
    expect([body.reasoning_effort, body.verbosity, body.logprobs, body.top_logprobs]).toEqual(["high", "low", true, 3]);
  });

  it("validates metadata and does not forward it", () => {
    expect("metadata" in translate({ input: "x", metadata: { team: "a" } }).body).toBe(false);
    expect(refusal({ input: "x", metadata: { k: 1 } }).message).toStartWith("metadata.k:");
  });

  it("leaves service_tier and cache options out and reports them", () => {
    const r = translate({ input: "x", service_tier: "priority", prompt_cache_retention: "24h" });
    expect(["service_tier" in r.body, "prompt_cache_retention" in r.body]).toEqual([false, false]);
    expect(r.droppedFields).toEqual(["service_tier", "prompt_cache_retention"]);
  });
});

describe("top-level fields", () => {
  it("refuses a field it does not know, and moderation", () => {
    expect(refusal({ input: "x", frobnicate: true }).message).toStartWith("frobnicate:");
    expect(refusal({ input: "x", moderation: { mode: "block" } }).message).toStartWith("moderation:");
  });

  it("treats null fields as unset", () => {
    expect(() => translate({ input: "x", frobnicate: null, previous_response_id: null, moderation: null })).not.toThrow();
  });

  it("accepts Codex's client_metadata and stream_options without effect", () => {
    const { body, droppedFields } = translate({ input: "x", client_metadata: { a: "b" }, stream_options: { include_obfuscation: false } });
    expect(["client_metadata" in body, droppedFields]).toEqual([false, []]);
  });
});

describe("text.format", () => {
  it("maps a flat json_schema format to a nested response_format", () => {
    const schema = { type: "object", properties: { a: { type: "string" } }, required: ["a"], additionalProperties: false };
    const { body } = translate({ input: "x", text: { format: { type: "json_schema", name: "out", schema, strict: true } } });
    expect(body.response_format).toEqual({ type: "json_schema", json_schema: { name: "out", schema, strict: true } });
  });

  it("maps json_object, and sends nothing for text", () => {
    expect(translate({ input: "x", text: { format: { type: "json_object" } } }).body.response_format).toEqual({ type: "json_object" });
    expect("response_format" in translate({ input: "x", text: { format: { type: "text" } } }).body).toBe(false);
  });

  it("refuses a json_schema format without a name", () => {
    expect(refusal({ input: "x", text: { format: { type: "json_schema", schema: {} } } }).message).toStartWith("text.format.name:");
  });
});

describe("tools", () => {
  it("nests flat function tools and passes strict only when given", () => {
    const { body } = translate({ input: "x", tools: [fn("a", { description: "A", strict: true }), { type: "function", name: "b", parameters: null }] });
    expect(body.tools).toEqual([
      { type: "function", function: { name: "a", description: "A", parameters: { type: "object", properties: {} }, strict: true } },
      { type: "function", function: { name: "b" } },
    ]);
  });

  it("maps tool_choice and parallel_tool_calls", () => {
    const { body } = translate({ input: "x", tools: [fn("a")], tool_choice: { type: "function", name: "a" }, parallel_tool_calls: false });
    expect([body.tool_choice, body.parallel_tool_calls]).toEqual([{ type: "function", function: { name: "a" } }, false]);
  });

  it("maps allowed_tools", () => {
    const { body } = translate({ input: "x", tools: [fn("a"), fn("b")], tool_choice: { type: "allowed_tools", mode: "required", tools: [{ type: "function", name: "b" }] } });
    expect(body.tool_choice).toEqual({ type: "allowed_tools", allowed_tools: { mode: "required", tools: [{ type: "function", function: { name: "b" } }] } });
  });

  it("refuses a tool_choice naming an unknown function", () => {
    expect(refusal({ input: "x", tools: [fn("a")], tool_choice: { type: "function", name: "z" } }).message).toStartWith("tool_choice.name:");
  });

  it("leaves offered hosted tools out and reports them once each", () => {
    const r = translate({ input: "x", tools: [{ type: "web_search", external_web_access: false }, fn("a"), { type: "file_search", vector_store_ids: ["vs_1"] }, { type: "web_search" }] });
    expect(r.droppedTools).toEqual(["web_search", "file_search"]);
    expect(r.body.tools?.map((t) => (t.function as JsonObject).name)).toEqual(["a"]);
  });

  it("sends no tool fields when only hosted tools were offered", () => {
    const { body } = translate({ input: "x", tools: [{ type: "web_search" }], tool_choice: "auto", parallel_tool_calls: true });
    expect(["tools" in body, "tool_choice" in body, "parallel_tool_calls" in body]).toEqual([false, false, false]);
  });

  it("refuses a tool_choice that forces a hosted tool", () => {
    const e = refusal({ input: "x", tools: [{ type: "web_search" }], tool_choice: { type: "web_search" } });
    expect([e.status, e.code]).toEqual([400, "invalid_request"]);
    expect(e.message).toStartWith("tool_choice:");
    expect(refusal({ input: "x", tools: [{ type: "file_search" }], tool_choice: "required" }).message).toStartWith("tool_choice:");
  });

  it("refuses an unknown tool type", () => {
    expect(refusal({ input: "x", tools: [fn("a"), { type: "functon", name: "b" }] }).message).toStartWith("tools[1].type:");
  });

  it("refuses a duplicate tool", () => {
    expect(refusal({ input: "x", tools: [fn("a"), fn("a")] }).message).toStartWith("tools[1].name:");
  });
});

describe("namespace and custom tools", () => {
  const ns = { type: "namespace", name: "mcp__github", description: "GitHub tools.", tools: [fn("create_issue", { description: "Open an issue." })] };

  it("flattens a namespace to <namespace>__<name> and maps it back", () => {
    const r = translate({ input: "x", tools: [ns] });
    expect(r.body.tools).toEqual([
      { type: "function", function: { name: "mcp__github__create_issue", description: "GitHub tools.\n\nOpen an issue.", parameters: { type: "object", properties: {} }, strict: false } },
    ]);
    expect(r.toolNames.get("mcp__github__create_issue")).toEqual({ name: "create_issue", namespace: "mcp__github", kind: "function" });
  });

  it("puts a namespace's description once, on its first tool: the upstream body stays about the client's size", () => {
    // The shape that grew 76x: a 10 KB description over 80 small tools.
    const children = Array.from({ length: 80 }, (_, i) => ({ type: "function", name: `t${i}` }));
    const req = { input: "x", tools: [{ type: "namespace", name: "mcp__big", description: "d".repeat(10_000), tools: children }] };
    const { body } = translate(req);
    const descriptions = body.tools!.map((t) => (t.function as JsonObject).description);
    expect(descriptions[0]).toBe("d".repeat(10_000));
    expect(descriptions.slice(1).every((d) => d === undefined)).toBe(true);
    expect(JSON.stringify(body).length / JSON.stringify(req).length).toBeLessThan(1.5);
  });

  it("renames history calls of a namespaced tool the same way", () => {
    const { body } = translate({ input: [{ type: "function_call", call_id: "c", namespace: "mcp__github", name: "create_issue", arguments: "{}" }], tools: [ns] });
    expect(body.messages[0]?.tool_calls?.[0]?.function?.name).toBe("mcp__github__create_issue");
  });

  it("gives Codex's default namespace `functions` bare names", () => {
    const r = translate({ input: "x", tools: [{ type: "namespace", name: "functions", description: "", tools: [fn("exec")] }] });
    expect(r.toolNames.get("exec")).toEqual({ name: "exec", namespace: "functions", kind: "function" });
  });

  it("hashes names that break the chat rules into 64 legal characters, reversibly", () => {
    const long = "x".repeat(60);
    const r = translate({ input: "x", tools: [{ type: "namespace", name: "mcp__some.server", description: "d", tools: [fn(long), fn("ok")] }] });
    const names = r.body.tools!.map((t) => (t.function as JsonObject).name as string);
    for (const n of names) expect(n).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    expect(new Set(names).size).toBe(2);
    expect(r.toolNames.get(names[0]!)).toEqual({ name: long, namespace: "mcp__some.server", kind: "function" });
    expect(r.toolNames.get(names[1]!)).toEqual({ name: "ok", namespace: "mcp__some.server", kind: "function" });
  });

  it("keeps two tools apart when their flat names collide", () => {
    const r = translate({ input: "x", tools: [fn("a__b"), { type: "namespace", name: "a", description: "", tools: [fn("b")] }] });
    const names = r.body.tools!.map((t) => (t.function as JsonObject).name);
    expect(names[0]).toBe("a__b");
    expect(names[1]).toMatch(/^a__b_[0-9a-f]{8}$/);
  });

  it("sends a custom tool as a function taking `input`, and its history call wrapped", () => {
    const custom = { type: "custom", name: "apply_patch", description: "Edit files.", format: { type: "grammar", syntax: "lark", definition: "start: /.+/" } };
    const r = translate({ input: [{ type: "custom_tool_call", call_id: "c", name: "apply_patch", input: "*** Begin Patch" }, { type: "custom_tool_call_output", call_id: "c", output: "Done" }], tools: [custom] });
    const tool = r.body.tools![0]!.function as JsonObject;
    expect(tool.name).toBe("apply_patch");
    expect(tool.description).toBe("Edit files.\n\nThe input must follow this lark grammar:\nstart: /.+/");
    expect((tool.parameters as JsonObject).required).toEqual(["input"]);
    expect(r.toolNames.get("apply_patch")?.kind).toBe("custom");
    expect(r.body.messages[0]?.tool_calls?.[0]?.function?.arguments).toBe('{"input":"*** Begin Patch"}');
    expect(r.body.messages[1]).toEqual({ role: "tool", tool_call_id: "c", content: "Done" });
  });

  it("takes tools from additional_tools input items (Responses Lite)", () => {
    const r = translate({ input: [{ type: "additional_tools", role: "developer", tools: [ns] }, { role: "user", content: "go" }] });
    expect(r.body.tools?.length).toBe(1);
    expect(r.body.messages).toEqual([{ role: "user", content: "go" }]);
  });
});

describe("Codex CLI default request", () => {
  it("translates the recorded request to the expected chat body", async () => {
    const req = await fixtureJson<ResponsesRequest>("responses/codex-request.json");
    const r = responsesRequestToChat(req, { upstreamModel: "qwen3-coder-480b", defaultMaxOutputTokens: 64000 });
    expect(r.body as JsonObject).toEqual(await fixtureJson("responses/codex-request.chat.json"));
  });

  it("drops web_search and serves everything else", async () => {
    const req = await fixtureJson<ResponsesRequest>("responses/codex-request.json");
    const r = responsesRequestToChat(req, { upstreamModel: "m", defaultMaxOutputTokens: 64000 });
    expect(r.droppedTools).toEqual(["web_search"]);
    expect(r.droppedFields).toEqual([]);
    expect(r.toolNames.get("multi_agent_v1__spawn_agent")).toEqual({ name: "spawn_agent", namespace: "multi_agent_v1", kind: "function" });
  });
});
