// The translated and native streams, read by the official SDKs' own stream helpers (no network:
// the client's fetch returns the bytes the gateway would send).
import { describe, expect, it } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { MessagesViaChatStream } from "../../src/dialects/messages-via-chat-stream.ts";
import { ChatViaMessagesStream } from "../../src/dialects/chat-via-messages-stream.ts";
import { NativeChatStream } from "../../src/dialects/native-stream.ts";
import { encodeSse } from "../../src/wire/sse.ts";
import { chatItems, costOf, messagesEvents, sseEvents } from "./stream-fixtures.ts";

const serving = (body: string) => (async () => new Response(body, { headers: { "content-type": "text/event-stream" } })) as unknown as typeof fetch;
const anthropic = (body: string) => new Anthropic({ apiKey: "k", baseURL: "http://gateway.test", maxRetries: 0, fetch: serving(body) });
const openai = (body: string) => new OpenAI({ apiKey: "k", baseURL: "http://gateway.test/v1", maxRetries: 0, fetch: serving(body) });
const ask = { model: "m", max_tokens: 100, messages: [{ role: "user" as const, content: "hi" }] };

function toMessages(fixture: string): string {
  const s = new MessagesViaChatStream({ model: "m", estimatedInputTokens: 100, costOf });
  // done() at the terminator, and again at EOF (a no-op once the stream has ended).
  const events = [...chatItems(fixture).flatMap((it) => (it === "[DONE]" ? s.done() : s.push(it))), ...s.done()];
  return events.map((e) => encodeSse(e.event, JSON.stringify(e.data))).join("");
}

function toChat(fixture: string, includeUsage: boolean): string {
  const s = new ChatViaMessagesStream({ model: "m", includeUsage, costOf, estimatedInputTokens: 100 });
  const items = [...messagesEvents(fixture).flatMap((e) => s.push(e)), ...s.done()];
  return items.map((c) => encodeSse(undefined, c === "[DONE]" ? c : JSON.stringify(c))).join("");
}

describe("official SDKs read the gateway's streams", () => {
  it("Anthropic's MessageStream assembles text and two tool calls translated from Chat", async () => {
    const msg = await anthropic(toMessages("chat-tools.sse")).messages.stream(ask).finalMessage();
    expect(msg.content).toEqual([
      { type: "text", text: "Checking both." },
      { type: "tool_use", id: "call_Wx1", name: "get_weather", input: { city: "Oslo" } },
      { type: "tool_use", id: "call_Tz2", name: "get_time", input: { tz: "CET" } },
    ] as never);
    expect(msg.stop_reason).toBe("tool_use");
    expect(msg.usage.output_tokens).toBe(40);
  });

  it("Anthropic's MessageStream raises the translated mid-stream error", async () => {
    const stream = anthropic(toMessages("chat-error.sse")).messages.stream(ask);
    await expect(stream.finalMessage()).rejects.toThrow(/server had an error/);
  });

  for (const includeUsage of [false, true]) {
    it(`OpenAI's stream helper assembles tool calls and usage with cost_usd translated from Messages (include_usage ${includeUsage})`, async () => {
      const done = await openai(toChat("messages-tools.sse", includeUsage)).chat.completions.stream(ask).finalChatCompletion();
      expect(done.choices[0]!.message.tool_calls!.map((c) => (c as { function: { arguments: string } }).function.arguments)).toEqual(['{"city": "Oslo"}', "{}"]);
      expect(done.usage).toMatchObject({ prompt_tokens: 125, completion_tokens: 58, cost_usd: 0.000975 });
    });
  }

  it("OpenAI's stream helper raises the translated mid-stream error", async () => {
    const stream = openai(toChat("messages-error.sse", false)).chat.completions.stream(ask);
    await expect(stream.finalChatCompletion()).rejects.toThrow(/Overloaded/);
  });

  it("OpenAI's stream helper gets usage from the finish chunk of a native stream without include_usage", async () => {
    const s = new NativeChatStream({ model: "m", includeUsage: false, costOf, estimatedInputTokens: 100 });
    const body = sseEvents("chat-text.sse").map((e) => s.push(e)).join("") + s.done();
    const done = await openai(body).chat.completions.stream(ask).finalChatCompletion();
    expect(done.usage).toMatchObject({ prompt_tokens: 2006, cost_usd: 0.000879 });
    expect(done.choices[0]!.message.content).toBe("Hello world");
  });
});
