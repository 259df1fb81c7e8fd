// The one contract every stream machine keeps (src/dialects/stream-machine.ts), checked on each pair
// through the interface alone: the relay reads nothing else.

import { describe, expect, it } from "bun:test";
import type { TokenUsage } from "../../src/core/money.ts";
import { ChatViaMessagesMachine } from "../../src/dialects/chat-via-messages-stream.ts";
import { MessagesViaChatMachine } from "../../src/dialects/messages-via-chat-stream.ts";
import { NativeChatMachine, NativeMessagesMachine } from "../../src/dialects/native-stream.ts";
import { ResponsesViaChatMachine } from "../../src/dialects/responses-via-chat/machine.ts";
import type { StreamMachine } from "../../src/dialects/stream-machine.ts";
import type { SseEvent } from "../../src/wire/sse.ts";
import { costOf, sseEvents } from "./stream-fixtures.ts";

const counts = { costOf, estimatedInputTokens: 2000 };
const responses = { model: "m", request: { input: "hi" }, toolNames: new Map(), ...counts };

/** Each fixture's usage in the ledger's buckets: chat-text.sse caches 1,920 of its 2,006 input tokens. */
const CHAT_USAGE: TokenUsage = { input: 86, output: 3, cacheRead: 1920, cacheWrite: 0 };
const MESSAGES_USAGE: TokenUsage = { input: 25, output: 12, cacheRead: 100, cacheWrite: 0 };

/** An upstream of one dialect: a whole answer, one that sends an error event, one cut before its end. */
const CHAT_UPSTREAM = { whole: "chat-text.sse", error: "chat-error.sse", cut: () => sseEvents("chat-text.sse").slice(0, 3), usage: CHAT_USAGE };
const MESSAGES_UPSTREAM = { whole: "messages-text.sse", error: "messages-error.sse", cut: () => sseEvents("messages-cut.sse"), usage: MESSAGES_USAGE };

const PAIRS: { pair: string; make: () => StreamMachine; upstream: typeof CHAT_UPSTREAM }[] = [
  { pair: "Messages from Messages", make: () => new NativeMessagesMachine({ model: "m", ...counts }), upstream: MESSAGES_UPSTREAM },
  { pair: "Chat from Chat", make: () => new NativeChatMachine({ model: "m", includeUsage: false, ...counts }), upstream: CHAT_UPSTREAM },
  { pair: "Chat from Chat with include_usage", make: () => new NativeChatMachine({ model: "m", includeUsage: true, ...counts }), upstream: CHAT_UPSTREAM },
  { pair: "Messages from Chat", make: () => new MessagesViaChatMachine({ model: "m", ...counts }), upstream: CHAT_UPSTREAM },
  { pair: "Chat from Messages", make: () => new ChatViaMessagesMachine({ model: "m", includeUsage: false, ...counts }), upstream: MESSAGES_UPSTREAM },
  { pair: "Chat from Messages with include_usage", make: () => new ChatViaMessagesMachine({ model: "m", includeUsage: true, ...counts }), upstream: MESSAGES_UPSTREAM },
  { pair: "Responses from Chat", make: () => new ResponsesViaChatMachine(responses, "chat"), upstream: CHAT_UPSTREAM },
  { pair: "Responses from Messages", make: () => new ResponsesViaChatMachine(responses, "messages"), upstream: MESSAGES_UPSTREAM },
];

/** Pushes the events as the relay does: until the upstream's last event, then end(). Returns each step's text. */
function relay(m: StreamMachine, events: SseEvent[]): { texts: string[]; pricedAt: number } {
  const texts: string[] = [];
  let pricedAt = -1;
  const step = (text: string) => {
    texts.push(text);
    if (pricedAt === -1 && m.priced) pricedAt = texts.length - 1;
  };
  for (const ev of events) {
    step(m.push(ev));
    if (m.upstreamEnded || m.outcome === "upstream_failed") break;
  }
  if (m.outcome !== "upstream_failed") step(m.end());
  return { texts, pricedAt };
}

for (const { pair, make, upstream } of PAIRS) {
  describe(`the ${pair} stream machine`, () => {
    it("reports completed and the upstream's usage after a whole answer", () => {
      const m = make();
      relay(m, sseEvents(upstream.whole));
      expect(m.upstreamEnded).toBe(true);
      expect(m.outcome).toBe("completed");
      expect(m.usage).toEqual(upstream.usage);
      expect(m.outputChars).toBeGreaterThan(0);
    });

    it("turns priced with the text that carries the final usage's cost_usd, and never before", () => {
      const { texts, pricedAt } = relay(make(), sseEvents(upstream.whole));
      expect(pricedAt).toBeGreaterThanOrEqual(0);
      expect(texts.findIndex((t) => t.includes('"cost_usd":'))).toBe(pricedAt);
    });

    it("reports upstream_failed at the upstream's error event, unpriced", () => {
      const m = make();
      const { texts } = relay(m, sseEvents(upstream.error));
      expect(m.outcome).toBe("upstream_failed");
      expect(m.priced).toBe(false);
      expect(texts.at(-1)).toContain("error");
    });

    it("stays running while an answer is cut short, and fails it at end()", () => {
      const m = make();
      for (const ev of upstream.cut()) m.push(ev);
      expect(m.outcome).toBe("running");
      expect(m.upstreamEnded).toBe(false);
      expect(m.end()).toContain("error");
      expect(m.outcome).toBe("upstream_failed");
      expect(m.priced).toBe(false);
    });

    it("reports upstream_failed after fail(), whose error event is written once", () => {
      const m = make();
      for (const ev of upstream.cut()) m.push(ev);
      expect(m.fail("api_error", "connection reset")).toContain("connection reset");
      expect(m.outcome).toBe("upstream_failed");
      expect(m.fail("api_error", "again")).not.toContain("again");
    });
  });
}

describe("stream machines of concurrent requests", () => {
  it("rename each its own upstream model when fed in turn", () => {
    const chunk = (model: string) => ({ data: `{"id":"c","object":"chat.completion.chunk","created":1,"model":"${model}","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}` });
    const a = new NativeChatMachine({ model: "public-a", includeUsage: true, ...counts });
    const b = new NativeChatMachine({ model: "public-b", includeUsage: true, ...counts });
    for (let i = 0; i < 3; i++) {
      expect(a.push(chunk("upstream-a"))).toContain('"model":"public-a"');
      expect(b.push(chunk("upstream-b"))).toContain('"model":"public-b"');
    }
  });
});

describe("a Messages stream from a Chat upstream that sends text between the fragments of a tool call", () => {
  it("is upstream_failed at once: the client got an error event, so nothing is billed", () => {
    const delta = (d: object) => ({ data: JSON.stringify({ id: "c", choices: [{ index: 0, delta: d, finish_reason: null }] }) });
    const call = (args: string, name?: string) => delta({ tool_calls: [{ index: 0, id: name && "call_0", function: { name, arguments: args } }] });
    const m = new MessagesViaChatMachine({ model: "m", ...counts });
    m.push(call("{", "f"));
    m.push(delta({ content: "meanwhile" }));
    expect(m.push(call("}"))).toContain("event: error");
    expect(m.outcome).toBe("upstream_failed");
  });
});
