import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { startTextRig, type TextRig } from "../support/text-rig.ts";
import { expectError } from "../support/errors.ts";

// A field sent as `null` (docs/api.md#rules, rule 12): absent where the vendor's own API takes null
// for it, refused where the vendor refuses it. Each model is served natively and translated:
// "claude-native" by the Anthropic mock, "gpt-native" by the OpenAI mock.

let r: TextRig;
beforeAll(async () => (r = await startTextRig()));
afterAll(() => r.stop());

const hi = [{ role: "user", content: "hi" }];
const post = (path: string, body: unknown) =>
  fetch(`${r.gw.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": r.acct.key, "anthropic-version": "2023-06-01" },
    body: JSON.stringify(body),
  });

describe("Messages", () => {
  it.each(["claude-native", "gpt-native"])("refuses stream: null with 400 naming stream, as Anthropic does (served by %s)", async (model) => {
    const before = await r.gw.money(r.acct.accountId);
    const err = await expectError(await post("/v1/messages", { model, messages: hi, max_tokens: 16, stream: null }), 400, "invalid_request");
    expect(err.message).toStartWith("stream: ");
    expect(await r.gw.money(r.acct.accountId)).toEqual(before);
  });

  // Fields Anthropic's API refuses as null ("temperature: Input should be a valid number"): its description
  // types them without `| null` (@anthropic-ai/sdk's MessageCreateParams; temperature, top_p and top_k
  // on the models that take them). Refused by the gateway whichever upstream serves the model, before
  // the hold: a Chat upstream once took them as absent while Anthropic's 400 came back on the native path.
  const refused = ["temperature", "top_p", "top_k", "system", "stop_sequences", "tools", "tool_choice", "thinking", "metadata", "output_config", "service_tier", "mcp_servers"];
  for (const model of ["claude-native", "gpt-native"]) {
    it.each(refused)(`refuses a null %s with 400 naming it, before any hold or upstream call (served by ${model})`, async (field) => {
      const before = await r.gw.money(r.acct.accountId);
      const calls = r.up.requests.length;
      const err = await expectError(await post("/v1/messages", { model, messages: hi, max_tokens: 16, [field]: null }), 400, "invalid_request");
      expect(err.message).toStartWith(`${field}: `);
      expect(r.up.requests.length).toBe(calls);
      expect(await r.gw.money(r.acct.accountId)).toEqual(before);
    });
  }

  // The fields @anthropic-ai/sdk types as `| null` (its types follow Anthropic's API description).
  const nullable: [string, Record<string, unknown>][] = [
    ["cache_control", { cache_control: null }],
    ["container", { container: null }],
    ["inference_geo", { inference_geo: null }],
    ["speed", { speed: null }],
    ["metadata.user_id", { metadata: { user_id: null } }],
    ["output_config.effort and .format", { output_config: { effort: null, format: null } }],
    ["a text block's cache_control and citations", { messages: [{ role: "user", content: [{ type: "text", text: "hi", cache_control: null, citations: null }] }] }],
    ["a tool's cache_control and eager_input_streaming", { tools: [{ name: "f", input_schema: { type: "object" }, cache_control: null, eager_input_streaming: null }] }],
  ];
  for (const model of ["claude-native", "gpt-native"]) {
    it.each(nullable)(`takes a null %s as absent (served by ${model})`, async (_name, extra) => {
      const res = await post("/v1/messages", { model, messages: hi, max_tokens: 16, ...extra });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { usage: { cost_usd: number } }).usage.cost_usd).toBeGreaterThan(0);
    });
  }
});

describe("Chat Completions and Responses", () => {
  // OpenAI's API description marks these nullable, and the openai SDK sends a field set to null as null.
  const chatNulls = ["stream", "stream_options", "temperature", "top_p", "stop", "metadata", "tools", "tool_choice", "n", "user", "seed", "response_format", "parallel_tool_calls", "logprobs", "presence_penalty", "frequency_penalty", "reasoning_effort", "service_tier", "store", "logit_bias", "top_logprobs", "modalities", "audio", "prediction", "web_search_options", "max_tokens"];
  for (const model of ["claude-native", "gpt-native"]) {
    it.each(chatNulls)(`takes a null %s as absent on a chat completion (served by ${model})`, async (field) => {
      const res = await post("/v1/chat/completions", { model, messages: hi, max_completion_tokens: 16, [field]: null });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toStartWith("application/json");
    });
  }

  const responsesNulls = ["stream", "temperature", "top_p", "metadata", "tools", "tool_choice", "instructions", "reasoning", "text", "parallel_tool_calls", "previous_response_id", "store", "user", "truncation", "include", "service_tier", "max_tool_calls", "prompt_cache_key", "safety_identifier", "top_logprobs", "background", "stream_options"];
  for (const model of ["claude-native", "gpt-native"]) {
    it.each(responsesNulls)(`takes a null %s as absent on a Responses request (served by ${model})`, async (field) => {
      const res = await post("/v1/responses", { model, input: "hi", max_output_tokens: 16, [field]: null });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toStartWith("application/json");
    });
  }
});
