// Chat client → Messages upstream (translation.md §2, §3, §7). Fixture pairs carry the mappings;
// the refusals are spelled out here, one per field.
import { describe, expect, it } from "bun:test";
import { chatRequestToMessages, type ChatViaMessagesOptions } from "../../src/dialects/chat-via-messages.ts";
import { messagesResponseToChat } from "../../src/dialects/chat-via-messages-response.ts";
import { toolIdFromMessages, toolIdToMessages } from "../../src/dialects/tool-ids.ts";
import type { ChatRequest, MessagesResponse } from "../../src/wire/shapes.ts";
import { translationCases } from "./translation-fixtures.ts";
import { refusal } from "../support/refusal.ts";

const OPTS: ChatViaMessagesOptions = { upstreamModel: "claude-up" };
const TOOLS = [{ type: "function", function: { name: "f", parameters: { type: "object" } } }];
const translate = (body: Record<string, unknown>, opts: Partial<ChatViaMessagesOptions> = {}) =>
  chatRequestToMessages({ model: "gpt-client", max_completion_tokens: 4096, messages: [{ role: "user", content: "Hi" }], ...body } as ChatRequest, { ...OPTS, ...opts });
const call = (args: string, id = "call_1") => ({ id, type: "function", function: { name: "f", arguments: args } });

/** A 400 invalid_request whose message starts with the field's JSON path. */
function expectRefused(fn: () => unknown, path: string): void {
  const e = refusal(fn);
  expect({ status: e.status, code: e.code }).toEqual({ status: 400, code: "invalid_request" });
  expect(e.message).toStartWith(`${path}: `);
}

describe("chatRequestToMessages fixtures", () => {
  for (const c of translationCases("chat-to-messages")) {
    it(c.name, () => {
      expect(chatRequestToMessages(c.input as ChatRequest, { ...OPTS, ...c.opts })).toEqual(c.expected as never);
    });
  }
});

describe("chatRequestToMessages refusals", () => {
  it("refuses n > 1 naming param n", () => {
    expectRefused(() => translate({ n: 2 }), "n");
  });

  it("refuses logprobs naming logprobs", () => {
    expectRefused(() => translate({ logprobs: true }), "logprobs");
  });

  it("refuses top_logprobs naming top_logprobs", () => {
    expectRefused(() => translate({ top_logprobs: 3 }), "top_logprobs");
  });

  it("refuses audio output naming audio", () => {
    expectRefused(() => translate({ audio: { format: "wav", voice: "alloy" } }), "audio");
  });

  it("refuses an audio modality naming its position", () => {
    expectRefused(() => translate({ modalities: ["text", "audio"] }), "modalities[1]");
  });

  it("refuses prediction naming prediction", () => {
    expectRefused(() => translate({ prediction: { type: "content", content: "x" } }), "prediction");
  });

  it("refuses json_object naming response_format.type", () => {
    expectRefused(() => translate({ response_format: { type: "json_object" } }), "response_format.type");
  });

  it("refuses json_schema on a model without structured outputs", () => {
    const response_format = { type: "json_schema", json_schema: { name: "a", schema: { type: "object" } } };
    expectRefused(() => translate({ response_format }, { caps: { structuredOutputs: false } }), "response_format");
  });

  it("refuses a whitespace-only stop sequence naming its position", () => {
    expectRefused(() => translate({ stop: ["END", " \n"] }), "stop[1]");
  });

  it("refuses a whitespace-only stop string naming stop", () => {
    expectRefused(() => translate({ stop: " " }), "stop");
  });

  it("refuses a forced tool_choice over tool history without tools naming tool_choice", () => {
    const messages = [{ role: "user", content: "Hi" }, { role: "assistant", content: null, tool_calls: [call("{}")] }, { role: "tool", tool_call_id: "call_1", content: "ok" }];
    expectRefused(() => translate({ messages, tool_choice: "required" }), "tool_choice");
  });

  it("refuses tool messages without any tool call or tools naming the message", () => {
    expectRefused(() => translate({ messages: [{ role: "tool", tool_call_id: "call_1", content: "ok" }] }), "messages[0]");
  });

  it("refuses arguments that are not JSON naming them", () => {
    const messages = [{ role: "user", content: "Hi" }, { role: "assistant", content: null, tool_calls: [call('{"a":')] }];
    expectRefused(() => translate({ tools: TOOLS, messages }), "messages[1].tool_calls[0].function.arguments");
  });

  it("refuses arguments that are not an object naming them", () => {
    const messages = [{ role: "user", content: "Hi" }, { role: "assistant", content: null, tool_calls: [call("[1,2]")] }];
    expectRefused(() => translate({ tools: TOOLS, messages }), "messages[1].tool_calls[0].function.arguments");
  });

  it("refuses a tool call without id naming it", () => {
    const messages = [{ role: "user", content: "Hi" }, { role: "assistant", content: null, tool_calls: [{ type: "function", function: { name: "f", arguments: "{}" } }] }];
    expectRefused(() => translate({ tools: TOOLS, messages }), "messages[1].tool_calls[0].id");
  });

  it("refuses a forced tool_choice with reasoning_effort naming tool_choice", () => {
    expectRefused(() => translate({ tools: TOOLS, tool_choice: "required", reasoning_effort: "low" }), "tool_choice");
  });

  it("refuses reasoning_effort when max tokens leave no room for a budget", () => {
    expectRefused(() => translate({ max_completion_tokens: 1000, reasoning_effort: "low" }), "reasoning_effort");
  });

  it("refuses an unknown reasoning_effort", () => {
    expectRefused(() => translate({ reasoning_effort: "extreme" }), "reasoning_effort");
  });

  it("refuses a request without max tokens naming max_completion_tokens", () => {
    expectRefused(() => translate({ max_completion_tokens: undefined }), "max_completion_tokens");
  });

  it("refuses a tool name over 128 characters naming it", () => {
    expectRefused(() => translate({ tools: [{ type: "function", function: { name: "f".repeat(129) } }] }), "tools[0].function.name");
  });

  it("refuses custom tools naming their type", () => {
    expectRefused(() => translate({ tools: [{ type: "custom", custom: { name: "grammar" } }] }), "tools[0].type");
  });

  it("refuses an allowed_tools tool_choice naming its type", () => {
    expectRefused(() => translate({ tools: TOOLS, tool_choice: { type: "allowed_tools", allowed_tools: {} } }), "tool_choice.type");
  });

  it("refuses deprecated functions naming them", () => {
    expectRefused(() => translate({ functions: [{ name: "f" }] }), "functions");
  });

  it("refuses a function-role message naming its role", () => {
    expectRefused(() => translate({ messages: [{ role: "function", name: "f", content: "x" }] }), "messages[0].role");
  });

  it("refuses web_search_options naming them", () => {
    expectRefused(() => translate({ web_search_options: {} }), "web_search_options");
  });

  it("refuses an unknown field naming it", () => {
    expectRefused(() => translate({ verbosity: "low" }), "verbosity");
  });

  it("refuses an assistant audio reference naming it", () => {
    const messages = [{ role: "user", content: "Hi" }, { role: "assistant", audio: { id: "audio_1" } }];
    expectRefused(() => translate({ messages }), "messages[1].audio");
  });

  it("refuses an image part with unsupported_content_type naming its position", () => {
    const messages = [{ role: "user", content: [{ type: "text", text: "see" }, { type: "image_url", image_url: { url: "data:image/png;base64,AA" } }] }];
    const e = refusal(() => translate({ messages }));
    expect({ code: e.code, message: e.message }).toEqual({ code: "unsupported_content_type", message: "messages[0].content[1]: image content is not supported; this gateway accepts text only" });
  });
});

describe("messagesResponseToChat fixtures", () => {
  for (const c of translationCases("messages-response-to-chat")) {
    it(c.name, () => {
      expect(messagesResponseToChat(c.input as MessagesResponse, { model: "gpt-client", created: 1_700_000_000 })).toEqual(c.expected as never);
    });
  }
});

describe("tool ids toward Anthropic", () => {
  it("leaves ids of [A-Za-z0-9_-] unchanged", () => {
    expect(toolIdToMessages("call_Ab-9")).toBe("call_Ab-9");
  });

  it("encodes other ids into the Anthropic charset", () => {
    expect(toolIdToMessages("functions.Bash:0")).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  for (const id of ["functions.Bash:0", "call_1", "gwb64_looks_encoded", "ü/ß id", ""]) {
    it(`maps ${JSON.stringify(id)} back exactly`, () => {
      expect(toolIdFromMessages(toolIdToMessages(id))).toBe(id);
    });
  }
});
