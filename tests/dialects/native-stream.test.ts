import { describe, expect, it } from "bun:test";
import { NativeChatMachine, NativeMessagesMachine, type NativeChatOptions, type NativeMessagesOptions } from "../../src/dialects/native-stream.ts";
import { plainChatText, plainText } from "../../src/dialects/stream-scan.ts";

const plainTextLength = (data: string) => plainText(data)?.length ?? -1;
const plainChatTextLength = (data: string) => plainChatText(data)?.length ?? -1;
import { encodeSse, type SseEvent } from "../../src/wire/sse.ts";
import { costOf, fixtureText, sseEvents } from "./stream-fixtures.ts";
import { readSse } from "../support/sse.ts";

/** The forwarded bytes, parsed back into events. */
const parsed = (bytes: string): SseEvent[] => readSse(bytes);
const json = (e: SseEvent | undefined) => JSON.parse(e!.data);
const messagesStream = (o: Partial<NativeMessagesOptions> = {}) => new NativeMessagesMachine({ costOf, estimatedInputTokens: 2000, ...o });

describe("NativeMessagesMachine", () => {
  const feed = (s: NativeMessagesMachine, name: string) => sseEvents(name).map((e) => s.push(e)).join("") + s.end();

  it("forwards every event byte for byte except message_delta", () => {
    const out = feed(messagesStream(), "messages-text.sse");
    const original = fixtureText("messages-text.sse").split("\n\n");
    const forwarded = out.split("\n\n");
    expect(forwarded.length).toBe(original.length);
    forwarded.forEach((block, i) => {
      if (block.startsWith("event: message_delta")) expect(block).not.toBe(original[i]);
      else expect(block).toBe(original[i]!);
    });
  });

  it("adds cost_usd of the complete usage so far to message_delta", () => {
    const out = parsed(feed(messagesStream(), "messages-text.sse"));
    // 25 input × $3/M + 100 cache reads × $0.30/M (from message_start) + 12 output × $15/M.
    expect(json(out.find((e) => e.event === "message_delta"))).toEqual({
      type: "message_delta",
      delta: { stop_reason: "end_turn", stop_sequence: null },
      usage: { output_tokens: 12, cost_usd: 0.000285 },
    });
  });

  it("tracks usage with message_delta overwriting output and the input counts it repeats", () => {
    const s = messagesStream();
    feed(s, "messages-text.sse");
    expect(s.usage).toEqual({ input: 25, output: 12, cacheRead: 100, cacheWrite: 0 });
    s.push({ event: "message_delta", data: '{"type":"message_delta","delta":{},"usage":{"input_tokens":30,"output_tokens":14}}' });
    expect(s.usage).toEqual({ input: 30, output: 14, cacheRead: 100, cacheWrite: 0 });
  });

  it("rewrites the model of message_start to the public name", () => {
    const s = messagesStream({ model: "claude-sonnet-4-5" });
    const first = sseEvents("messages-text.sse")[0]!;
    expect(json(parsed(s.push(first))[0]).message.model).toBe("claude-sonnet-4-5");
  });

  it("leaves message_start byte-identical when the model already matches", () => {
    const s = messagesStream({ model: "claude-sonnet-4-5-20250929" });
    const first = sseEvents("messages-text.sse")[0]!;
    expect(s.push(first)).toBe(encodeSse(first.event, first.data));
  });

  it("reports completed after message_stop and adds nothing at EOF", () => {
    const s = messagesStream();
    const bytes = sseEvents("messages-text.sse").map((e) => s.push(e)).join("");
    expect(s.outcome).toBe("completed");
    expect(s.upstreamEnded).toBe(true);
    expect(s.end()).toBe("");
    expect(bytes.endsWith('event: message_stop\ndata: {"type":"message_stop"}\n\n')).toBe(true);
  });

  it("forwards an upstream error event and reports the upstream failed", () => {
    const s = messagesStream();
    const out = parsed(feed(s, "messages-error.sse"));
    expect(out.at(-1)).toEqual({ event: "error", data: '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}' });
    expect(s.outcome).toBe("upstream_failed");
    expect(s.upstreamEnded).toBe(false);
  });

  it("sends an error event at EOF when message_stop never came", () => {
    const s = messagesStream();
    const out = parsed(feed(s, "messages-cut.sse"));
    expect(json(out.at(-1))).toEqual({ type: "error", error: { type: "upstream_unavailable", message: "upstream stream ended before message_stop" } });
    expect(s.outputChars).toBe(3);
  });

  it("writes fail() as a Messages error event, once", () => {
    const s = messagesStream();
    expect(s.fail("api_error", "connection reset")).toBe('event: error\ndata: {"type":"error","error":{"type":"api_error","message":"connection reset"}}\n\n');
    expect(s.fail("api_error", "again")).toBe("");
    expect(s.end()).toBe("");
  });

  it("shows and reports its own estimate in message_delta when the upstream counts nothing", () => {
    const s = messagesStream();
    const noUsage = (e: SseEvent): SseEvent => {
      const d = JSON.parse(e.data);
      if (d.message) delete d.message.usage;
      delete d.usage;
      return { event: e.event, data: JSON.stringify(d) };
    };
    const out = parsed(sseEvents("messages-text.sse").map((e) => s.push(noUsage(e))).join(""));
    // messages-text.sse streams "Hello!" (6 characters): ceil(6 / 4) = 2 output tokens; input is the estimate.
    expect(s.usage).toEqual({ input: 2000, output: 2, cacheRead: 0, cacheWrite: 0 });
    expect(json(out.find((e) => e.event === "message_delta")).usage).toEqual({
      input_tokens: 2000,
      output_tokens: 2,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      cost_usd: 0.00603,
    });
  });

  // The SDK's full Usage, as a translated stream's message_start has it: null where nothing is known yet.
  const fallbackStartUsage = {
    input_tokens: 2000,
    output_tokens: 0,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    cache_creation: null,
    server_tool_use: null,
    output_tokens_details: null,
    inference_geo: null,
    service_tier: null,
    speed: null,
  };
  const startWith = (usage: unknown) => ({ type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", model: "m", content: [], ...(usage === undefined ? {} : { usage }) } });

  it("gives a message_start without usage the full Usage shape with the input estimate, which the SDKs' stream helpers write into", () => {
    const s = messagesStream();
    const out = json(parsed(s.push({ event: "message_start", data: JSON.stringify(startWith(undefined)) }))[0]);
    expect(out.message.usage).toEqual(fallbackStartUsage);
  });

  it("replaces a message_start usage whose counts are not counts with the full Usage shape and the input estimate", () => {
    const s = messagesStream();
    const out = json(parsed(s.push({ event: "message_start", data: JSON.stringify(startWith({ input_tokens: "-5", output_tokens: 1 })) }))[0]);
    expect(out.message.usage).toEqual(fallbackStartUsage);
  });

  it("forwards a message_delta it cannot parse unchanged", () => {
    const s = messagesStream();
    expect(s.push({ event: "message_delta", data: "{not json" })).toBe("event: message_delta\ndata: {not json\n\n");
  });
});

describe("counting a text delta without parsing it", () => {
  const event = (text: string) => JSON.stringify({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text } });
  const parsedLength = (data: string) => (JSON.parse(data) as { delta: { text: string } }).delta.text.length;

  it.each(["Hello ", "", "naïve café", "emoji 🦀 counts two", "tabs\tand\nnewlines", 'a "quote"', "back\\slash", "\u00e9"])(
    "counts %j exactly as parsing would, or leaves it to the parser",
    (text) => {
      const data = event(text);
      const n = plainTextLength(data);
      expect(n === -1 || n === parsedLength(data)).toBe(true);
      // Without escapes in the JSON text, the fast count applies.
      if (!data.slice(data.indexOf('"text":"') + 8, -3).includes("\\")) expect(n).toBe(parsedLength(data));
    },
  );

  it("leaves other shapes to the parser", () => {
    expect(plainTextLength('{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}')).toBe(-1);
    expect(plainTextLength('{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi","extra":1}}')).toBe(-1);
    expect(plainTextLength('{"type": "content_block_delta", "delta": {"type": "text_delta", "text": "hi"}}')).toBe(-1);
  });

  it("gives the stream the same character count as parsing every delta", () => {
    const s = messagesStream();
    const texts = ["Hello ", "wörld ", 'say "hi"', "line\nbreak", "🦀"];
    for (const t of texts) s.push({ event: "content_block_delta", data: event(t) });
    expect(s.outputChars).toBe(texts.reduce((n, t) => n + t.length, 0));
  });
});

describe("recognising a chat chunk of text alone without parsing it", () => {
  const chunk = (o: Record<string, unknown> = {}, delta: Record<string, unknown> = { content: "Hi there" }) =>
    JSON.stringify({ id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: "gpt-x", choices: [{ index: 0, delta, logprobs: null, finish_reason: null }], usage: null, ...o });

  it("counts the text of an unfinished, usage-free, text-only chunk", () => {
    expect(plainChatTextLength(chunk())).toBe(8);
    expect(plainChatTextLength(chunk({}, { content: "naïve 🦀" }))).toBe("naïve 🦀".length);
    expect(plainChatTextLength(chunk({ usage: undefined }))).toBe(8);
  });

  it.each([
    ["a finish", chunk().replace('"finish_reason":null', '"finish_reason":"stop"')],
    ["usage", chunk({ usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } })],
    ["an escape in the text", chunk({}, { content: 'say "hi"\n' })],
    ["a role beside the text", chunk({}, { role: "assistant", content: "Hi" })],
    ["tool calls", chunk({}, { tool_calls: [{ index: 0, function: { arguments: "{}" } }] })],
    ["an error", chunk({ error: { message: "x" } })],
    ["spaces after colons", chunk().replaceAll('":', '": ')],
  ])("leaves a chunk with %s to the parser", (_, data) => {
    expect(plainChatTextLength(data)).toBe(-1);
  });
});

describe("NativeChatMachine", () => {
  const make = (o: Partial<NativeChatOptions> = {}) => new NativeChatMachine({ model: "gpt-4o-mini-2024-07-18", includeUsage: false, costOf, estimatedInputTokens: 2000, ...o });
  const feed = (s: NativeChatMachine, events: SseEvent[]) => events.map((e) => s.push(e)).join("") + s.end();
  const dataOf = (name: string) => sseEvents(name).map((e) => e.data);

  it("forwards every chunk byte for byte and adds cost_usd to the usage chunk when the client asked for include_usage", () => {
    const out = parsed(feed(make({ includeUsage: true }), sseEvents("chat-text.sse"))).map((e) => e.data);
    const input = dataOf("chat-text.sse");
    expect(out.slice(0, 4)).toEqual(input.slice(0, 4));
    expect(JSON.parse(out[4]!)).toEqual({ ...JSON.parse(input[4]!), usage: { ...JSON.parse(input[4]!).usage, cost_usd: 0.000879 } });
    expect(out[5]).toBe("[DONE]");
    expect(out.length).toBe(6);
  });

  describe("renaming the upstream's model to the public one", () => {
    const chunk = (model: string) => `{"id":"c1","object":"chat.completion.chunk","created":1,"model":${model},"system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":"1.0e3 \\u00e9"},"finish_reason":null}]}`;

    it("rewrites only the model in the upstream's own bytes, keeping every other byte as sent", () => {
      const out = make({ model: "public-name" }).push({ data: chunk('"upstream-name"') });
      expect(out).toBe(`data: ${chunk('"public-name"')}\n\n`);
    });

    it("falls back to serialising the chunk when the model is not in the compact form", () => {
      const spaced = chunk('"upstream-name"').replace('"model":', '"model": ');
      const out = parsed(make({ model: "public-name" }).push({ data: spaced }));
      expect(JSON.parse(out[0]!.data)).toEqual({ ...JSON.parse(spaced), model: "public-name" });
    });

    it("does not touch a same-named value nested under choices", () => {
      const data = `{"id":"c1","model":"u","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null,"extra":{"model":"u"}}]}`;
      const out = parsed(make({ model: "p" }).push({ data }));
      expect(JSON.parse(out[0]!.data)).toEqual({ ...JSON.parse(data), model: "p" });
    });
  });

  it("holds the finish chunk until the usage chunk and merges usage with cost_usd into it when include_usage is off", () => {
    const s = make();
    const events = sseEvents("chat-text.sse");
    const input = events.map((e) => e.data);
    expect(s.push(events[3]!)).toBe(""); // the finish chunk waits
    const merged = parsed(s.push(events[4]!));
    expect(merged.length).toBe(1);
    expect(JSON.parse(merged[0]!.data)).toEqual({ ...JSON.parse(input[3]!), usage: { ...JSON.parse(input[4]!).usage, cost_usd: 0.000879 } });
    expect(s.push(events[5]!)).toBe("data: [DONE]\n\n");
  });

  it("never forwards the choices:[] usage chunk when include_usage is off", () => {
    const out = parsed(feed(make(), sseEvents("chat-text.sse")));
    expect(out.map((e) => (e.data === "[DONE]" ? "[DONE]" : JSON.parse(e.data).choices.length))).toEqual([1, 1, 1, 1, "[DONE]"]);
  });

  describe("an upstream that ignores include_usage", () => {
    // chat-no-usage.sse: "Hello world" is 11 chars → ceil(11/4) = 3 output tokens; input is the reservation estimate.
    const estimate = { prompt_tokens: 2000, completion_tokens: 3, total_tokens: 2003, prompt_tokens_details: { cached_tokens: 0 }, cost_usd: 0.006045 };
    const billed = { input: 2000, output: 3, cacheRead: 0, cacheWrite: 0 };

    it("merges its own estimate with cost_usd into the held finish chunk at [DONE] and reports it as usage", () => {
      const s = make();
      const out = parsed(feed(s, sseEvents("chat-no-usage.sse"))).map((e) => e.data);
      const input = dataOf("chat-no-usage.sse");
      expect(out).toEqual([...input.slice(0, 2), JSON.stringify({ ...JSON.parse(input[2]!), usage: estimate }), "[DONE]"]);
      expect(s.usage).toEqual(billed);
    });

    it("sends its own estimate in a choices:[] chunk with the upstream's id before [DONE] when the client asked for include_usage", () => {
      const s = make({ includeUsage: true });
      const out = parsed(feed(s, sseEvents("chat-no-usage.sse"))).map((e) => e.data);
      expect(out.slice(0, 3)).toEqual(dataOf("chat-no-usage.sse").slice(0, 3));
      expect(JSON.parse(out[3]!)).toEqual({ id: "chatcmpl-B9xT1", object: "chat.completion.chunk", created: 1763800000, model: "gpt-4o-mini-2024-07-18", choices: [], usage: estimate });
      expect(out.slice(4)).toEqual(["[DONE]"]);
      expect(s.usage).toEqual(billed);
    });

    it("shows the estimate at EOF when the upstream closed after the finish without [DONE]", () => {
      const out = parsed(feed(make({ includeUsage: true }), sseEvents("chat-no-usage.sse").slice(0, -1))).map((e) => e.data);
      expect(JSON.parse(out.at(-2)!).usage).toEqual(estimate);
      expect(out.at(-1)).toBe("[DONE]");
    });

    it("shows and reports no estimate for a stream cut before its finish", () => {
      const s = make({ includeUsage: true });
      const out = feed(s, sseEvents("chat-no-usage.sse").slice(0, 2));
      expect(out).not.toContain("prompt_tokens");
      expect(s.usage).toBeNull();
    });
  });

  it("merges usage carried on the finish chunk itself at [DONE]", () => {
    const s = make();
    const finish = '{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}';
    expect(s.push({ data: finish })).toBe("");
    const out = parsed(s.push({ data: "[DONE]" }));
    expect(JSON.parse(out[0]!.data).usage).toEqual({ prompt_tokens: 10, completion_tokens: 2, total_tokens: 12, cost_usd: 0.00006 });
    expect(out[1]!.data).toBe("[DONE]");
  });

  it("rewrites the model of each chunk to the public name when it differs", () => {
    const out = parsed(feed(make({ model: "gpt-4o-mini", includeUsage: true }), sseEvents("chat-text.sse")));
    expect(out.slice(0, -1).map((e) => JSON.parse(e.data).model)).toEqual(Array(5).fill("gpt-4o-mini"));
  });

  it("tracks usage converted to uncached input and cache reads", () => {
    const s = make();
    feed(s, sseEvents("chat-text.sse"));
    expect(s.usage).toEqual({ input: 86, output: 3, cacheRead: 1920, cacheWrite: 0 });
  });

  it("forwards an error chunk, reports the upstream failed and adds nothing at EOF", () => {
    const s = make();
    const out = parsed(feed(s, sseEvents("chat-error.sse"))).map((e) => e.data);
    expect(out).toEqual(dataOf("chat-error.sse"));
    expect(s.outcome).toBe("upstream_failed");
  });

  it("forwards an event named error and reports the upstream failed", () => {
    const s = make();
    expect(s.push({ event: "error", data: '{"error":{"message":"x"}}' })).toBe('event: error\ndata: {"error":{"message":"x"}}\n\n');
    expect(s.outcome).toBe("upstream_failed");
  });

  it("adds [DONE] at EOF after a finish when the upstream closed without it", () => {
    const events = sseEvents("chat-text.sse").slice(0, -1);
    const out = parsed(feed(make(), events)).map((e) => e.data);
    expect(out.at(-1)).toBe("[DONE]");
    expect(JSON.parse(out.at(-2)!).usage.cost_usd).toBe(0.000879);
  });

  it("sends an error chunk at EOF when no finish_reason came", () => {
    const s = make();
    const out = feed(s, sseEvents("chat-text.sse").slice(0, 2));
    expect(out.endsWith('data: {"error":{"message":"upstream stream ended before a finish_reason","type":"upstream_unavailable","code":"upstream_unavailable"}}\n\n')).toBe(true);
    expect(s.outcome).toBe("upstream_failed");
  });

  it("flushes a held finish chunk before the error of fail()", () => {
    const s = make();
    const events = sseEvents("chat-text.sse");
    s.push(events[3]!);
    const out = parsed(s.fail("upstream_unavailable", "connection reset"));
    expect(JSON.parse(out[0]!.data).choices[0].finish_reason).toBe("stop");
    expect(JSON.parse(out[1]!.data)).toEqual({ error: { message: "connection reset", type: "upstream_unavailable", code: "upstream_unavailable" } });
  });

  it("keeps chunks that follow a held finish chunk in order behind it", () => {
    const s = make();
    const events = sseEvents("chat-text.sse");
    s.push(events[3]!);
    expect(s.push({ data: '{"id":"x","choices":[{"index":0,"delta":{},"finish_reason":null}]}' })).toBe("");
    const out = parsed(s.push(events[4]!));
    expect(out.map((e) => JSON.parse(e.data).id)).toEqual(["chatcmpl-B9xT1", "x"]);
  });

  it("forwards text chunks after the first as they came, model renamed, counting their text", () => {
    const s = make({ model: "public-model", includeUsage: true });
    const texts = ["", "Hello ", "wörld", "!"];
    const inputs = texts.map((content, i) =>
      JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "upstream-model", choices: [{ index: 0, delta: i ? { content } : { role: "assistant", content }, finish_reason: null }], usage: null }),
    );
    const out = parsed(inputs.map((data) => s.push({ event: undefined, data })).join(""));
    expect(out.map((e) => e.data)).toEqual(inputs.map((d) => d.replace('"model":"upstream-model"', '"model":"public-model"')));
    expect(s.outputChars).toBe("Hello wörld!".length);
  });

  it("counts text, reasoning and tool argument characters in outputChars", () => {
    const s = make();
    feed(s, sseEvents("chat-tools.sse"));
    expect(s.outputChars).toBe("Checking both.".length + '{"city":"Oslo"}'.length + '{"tz":"CET"}'.length);
  });
});
