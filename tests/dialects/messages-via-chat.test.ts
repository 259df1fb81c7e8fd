// Messages client → Chat upstream (translation.md §1, §3, §7). Fixture pairs carry the mappings;
// the refusals are spelled out here, one per field.
import { describe, expect, it } from "bun:test";
import { chatResponseToMessages, messagesRequestToChat, type MessagesViaChatOptions } from "../../src/dialects/messages-via-chat.ts";
import type { ChatResponse, MessagesRequest } from "../../src/wire/shapes.ts";
import { translationCases } from "./translation-fixtures.ts";
import { refusal } from "../support/refusal.ts";

const OPTS: MessagesViaChatOptions = { upstreamModel: "gpt-up", maxTokensField: "max_completion_tokens" };
const translate = (body: Record<string, unknown>, opts: Partial<MessagesViaChatOptions> = {}) =>
  messagesRequestToChat({ model: "claude-client", max_tokens: 1024, messages: [{ role: "user", content: "Hi" }], ...body } as MessagesRequest, { ...OPTS, ...opts });

/** A 400 invalid_request whose message starts with the field's JSON path. */
function expectRefused(fn: () => unknown, path: string): void {
  const e = refusal(fn);
  expect({ status: e.status, code: e.code }).toEqual({ status: 400, code: "invalid_request" });
  expect(e.message).toStartWith(`${path}: `);
}

describe("messagesRequestToChat fixtures", () => {
  for (const c of translationCases("messages-to-chat")) {
    it(c.name, () => {
      expect(messagesRequestToChat(c.input as MessagesRequest, { ...OPTS, ...c.opts })).toEqual(c.expected as never);
    });
  }
});

describe("messagesRequestToChat refusals", () => {
  it("refuses more than 4 stop_sequences naming stop_sequences", () => {
    expectRefused(() => translate({ stop_sequences: ["a", "b", "c", "d", "e"] }), "stop_sequences");
  });

  it("refuses an Anthropic-defined tool naming its type", () => {
    expectRefused(() => translate({ tools: [{ type: "web_search_20250305", name: "web_search" }] }), "tools[0].type");
  });

  it("refuses a tool name longer than 64 characters naming it", () => {
    expectRefused(() => translate({ tools: [{ name: "mcp__" + "x".repeat(60), input_schema: { type: "object" } }] }), "tools[0].name");
  });

  it("refuses a tool name with characters OpenAI rejects", () => {
    expectRefused(() => translate({ tools: [{ name: "files.read", input_schema: { type: "object" } }] }), "tools[0].name");
  });

  it("refuses an unknown tool key naming it", () => {
    expectRefused(() => translate({ tools: [{ name: "f", input_schema: { type: "object" }, defer_loading: true }] }), "tools[0].defer_loading");
  });

  it("refuses a long tool name in tool_choice", () => {
    expectRefused(() => translate({ tool_choice: { type: "tool", name: "y".repeat(65) } }), "tool_choice.name");
  });

  it("refuses an unknown tool_choice type", () => {
    expectRefused(() => translate({ tool_choice: { type: "maybe" } }), "tool_choice.type");
  });

  for (const field of ["mcp_servers", "container", "context_management"]) {
    it(`refuses ${field} naming it`, () => {
      expectRefused(() => translate({ [field]: field === "container" ? "cntr_1" : [] }), field);
    });
  }

  it("refuses an unknown top-level field naming it", () => {
    expectRefused(() => translate({ inference_geo: "eu" }), "inference_geo");
  });

  it("refuses an unknown metadata key naming it", () => {
    expectRefused(() => translate({ metadata: { user_id: "u", team: "x" } }), "metadata.team");
  });

  it("refuses an output_config format other than json_schema", () => {
    expectRefused(() => translate({ output_config: { format: { type: "grammar" } } }), "output_config.format.type");
  });

  it("refuses an unknown thinking type", () => {
    expectRefused(() => translate({ thinking: { type: "deep" } }, { caps: { reasoning: true } }), "thinking.type");
  });

  it("refuses a search_result block naming its position", () => {
    const messages = [{ role: "user", content: [{ type: "search_result", source: "s", title: "t", content: [] }] }];
    expectRefused(() => translate({ messages }), "messages[0].content[0]");
  });

  it("refuses a tool_use input that is not an object", () => {
    const messages = [{ role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "f", input: "ls" }] }];
    expectRefused(() => translate({ messages }), "messages[0].content[0].input");
  });

  it("refuses an unknown role naming it", () => {
    expectRefused(() => translate({ messages: [{ role: "tool", content: "x" }] }), "messages[0].role");
  });

  it("refuses an image with unsupported_content_type naming its position", () => {
    const messages = [{ role: "user", content: [{ type: "text", text: "see" }, { type: "image", source: { type: "url", url: "http://x/a.png" } }] }];
    const e = refusal(() => translate({ messages }));
    expect({ code: e.code, message: e.message }).toEqual({ code: "unsupported_content_type", message: "messages[0].content[1]: image content is not supported; this gateway accepts text only" });
  });

  it("refuses an image inside a tool_result naming the nested position", () => {
    const messages = [{ role: "user", content: [{ type: "tool_result", tool_use_id: "t", content: [{ type: "image", source: {} }] }] }];
    expect(refusal(() => translate({ messages })).message).toStartWith("messages[0].content[0].content[0]: image content");
  });
});

describe("messagesRequestToChat losses", () => {
  // Claude Code marks the last block of a turn; an assistant turn can end in a tool_use.
  it("names a tool_use block's cache_control as dropped", () => {
    const messages = [
      { role: "user", content: "go" },
      { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "f", input: {}, cache_control: { type: "ephemeral" } }] },
    ];
    expect(translate({ messages }).dropped).toEqual(["messages[1].content[0].cache_control"]);
  });
});

describe("chatResponseToMessages fixtures", () => {
  for (const c of translationCases("chat-response-to-messages")) {
    it(c.name, () => {
      expect(chatResponseToMessages(c.input as ChatResponse, { model: "claude-client" })).toEqual(c.expected as never);
    });
  }
});

describe("chatResponseToMessages", () => {
  it("answers 502 when the upstream sent no choices", () => {
    const res = { id: "chatcmpl-x", object: "chat.completion", created: 1, model: "m", choices: [] } as ChatResponse;
    expect(refusal(() => chatResponseToMessages(res, { model: "c" })).status).toBe(502);
  });

  it("makes a fresh msg_ id when the upstream sent none", () => {
    const res = { object: "chat.completion", created: 1, model: "m", choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: "x" } }] } as unknown as ChatResponse;
    expect(chatResponseToMessages(res, { model: "c" }).id).toMatch(/^msg_[0-9a-f]{32}$/);
  });
});
