import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { expectedNano } from "../support/prices.ts";
import { sse } from "../support/sse.ts";
import { startTextRig, type TextRig } from "../support/text-rig.ts";

let rig: TextRig;
beforeAll(async () => {
  rig = await startTextRig();
});
afterAll(() => rig.stop());

const usage = { input: 20, output: 10, cacheRead: 0, cacheWrite: 0 };
const cost = expectedNano(usage) / 1e9;

describe("Messages clients", () => {
  for (const model of ["claude-native", "gpt-native"]) {
    const path = model === "claude-native" ? "native" : "translated";
    it(`gets a ${path} non-streamed answer with cost_usd`, async () => {
      rig.up.script({ kind: "text", text: "Hello there", usage });
      const msg = await rig.anthropic().messages.create({ model, max_tokens: 100, messages: [{ role: "user", content: "hi" }] });
      expect(msg.content[0]).toMatchObject({ type: "text", text: "Hello there" });
      expect(msg.model).toBe(model);
      expect(msg.stop_reason).toBe("end_turn");
      expect((msg.usage as unknown as { cost_usd: number }).cost_usd).toBe(cost);
    });

    it(`streams a ${path} answer whose final message_delta carries cost_usd`, async () => {
      rig.up.script({ kind: "text", text: "one two three", usage });
      const stream = rig.anthropic().messages.stream({ model, max_tokens: 100, messages: [{ role: "user", content: "hi" }] });
      let finalCost: number | undefined;
      stream.on("streamEvent", (ev) => {
        if (ev.type === "message_delta") finalCost = (ev.usage as unknown as { cost_usd: number }).cost_usd;
      });
      const msg = await stream.finalMessage();
      expect(msg.content.map((b) => (b.type === "text" ? b.text : "")).join("")).toBe("one two three");
      expect(finalCost).toBe(cost);
      expect(msg.usage.output_tokens).toBe(10);
    });

    // messages.md §6: stop_details is a nullable field of every Message; the SDK types it `RefusalStopDetails | null`.
    it(`gets a ${path} non-streamed answer with stop_details null`, async () => {
      rig.up.script({ kind: "text", text: "Hello there", usage });
      const msg = await rig.anthropic().messages.create({ model, max_tokens: 100, messages: [{ role: "user", content: "hi" }] });
      expect(msg.stop_details).toBeNull();
    });

    // sse.md §2: message_start's message and message_delta's delta carry it, and MessageStream copies the delta's.
    it(`streams a ${path} answer whose final message has stop_details null`, async () => {
      rig.up.script({ kind: "text", text: "one two", usage });
      const stream = rig.anthropic().messages.stream({ model, max_tokens: 100, messages: [{ role: "user", content: "hi" }] });
      let startDetails: unknown;
      stream.on("streamEvent", (ev) => {
        if (ev.type === "message_start") startDetails = ev.message.stop_details;
      });
      const msg = await stream.finalMessage();
      expect(startDetails).toBeNull();
      expect(msg.stop_details).toBeNull();
    });

    it(`streams ${path} tool calls with argument fragments`, async () => {
      rig.up.script({ kind: "tool_calls", calls: [{ name: "get_weather", arguments: { city: "Oslo" } }, { name: "get_time", arguments: { tz: "CET" } }], argChunks: 3 });
      const tools = [
        { name: "get_weather", input_schema: { type: "object" as const, properties: { city: { type: "string" } } } },
        { name: "get_time", input_schema: { type: "object" as const, properties: { tz: { type: "string" } } } },
      ];
      const msg = await rig.anthropic().messages.stream({ model, max_tokens: 100, tools, messages: [{ role: "user", content: "weather?" }] }).finalMessage();
      const uses = msg.content.filter((b) => b.type === "tool_use");
      expect(uses.map((u) => (u.type === "tool_use" ? [u.name, u.input] : null))).toEqual([
        ["get_weather", { city: "Oslo" }],
        ["get_time", { tz: "CET" }],
      ]);
      expect(msg.stop_reason).toBe("tool_use");
    });
  }
});

// Several OpenAI-compatible servers finish a tool call with "stop"; the Anthropic SDK's tool runner
// runs tools only on stop_reason "tool_use" (BetaToolRunner), so the tool calls decide it.
describe("Messages clients on a Chat upstream that finishes tool calls with stop", () => {
  const tools = [{ name: "get_weather", input_schema: { type: "object" as const, properties: { city: { type: "string" } } } }];
  const script = () => rig.up.script({ kind: "tool_calls", calls: [{ name: "get_weather", arguments: { city: "Oslo" } }], stopReason: "stop" });

  it("gets a non-streamed answer with stop_reason tool_use", async () => {
    script();
    const msg = await rig.anthropic().messages.create({ model: "gpt-native", max_tokens: 100, tools, messages: [{ role: "user", content: "weather?" }] });
    expect(msg.content.map((b) => b.type)).toEqual(["tool_use"]);
    expect(msg.stop_reason).toBe("tool_use");
  });

  it("streams an answer whose final message has stop_reason tool_use", async () => {
    script();
    const msg = await rig.anthropic().messages.stream({ model: "gpt-native", max_tokens: 100, tools, messages: [{ role: "user", content: "weather?" }] }).finalMessage();
    expect(msg.content.map((b) => b.type)).toEqual(["tool_use"]);
    expect(msg.stop_reason).toBe("tool_use");
  });
});

describe("Messages clients on a Chat upstream that interleaves parallel tool calls", () => {
  it("assemble each call's input from its own fragments with the stream helper", async () => {
    const chunk = (delta: object, finish: string | null = null) =>
      sse(undefined, { id: "chatcmpl-il", object: "chat.completion.chunk", created: 1, model: "gpt-upstream-1", choices: [{ index: 0, delta, finish_reason: finish }] });
    const call = (index: number, args: string, head?: { id: string; name: string }) =>
      chunk({ tool_calls: [{ index, ...(head ? { id: head.id, type: "function" } : {}), function: { ...(head ? { name: head.name } : {}), arguments: args } }] });
    const body =
      chunk({ role: "assistant", content: null }) +
      call(0, '{"city":', { id: "call_a", name: "get_weather" }) +
      call(1, '{"tz":', { id: "call_b", name: "get_time" }) +
      call(0, '"Oslo"}') +
      call(1, '"CET"}') +
      chunk({}, "tool_calls") +
      sse(undefined, { id: "chatcmpl-il", object: "chat.completion.chunk", created: 1, model: "gpt-upstream-1", choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } }) +
      sse(undefined, "[DONE]");
    rig.up.script({ kind: "raw", headers: { "content-type": "text/event-stream" }, body });
    const tools = ["get_weather", "get_time"].map((name) => ({ name, input_schema: { type: "object" as const } }));
    const msg = await rig.anthropic().messages.stream({ model: "gpt-native", max_tokens: 100, tools, messages: [{ role: "user", content: "go" }] }).finalMessage();
    expect(msg.content.map((b) => (b.type === "tool_use" ? [b.id, b.input] : b.type))).toEqual([
      ["call_a", { city: "Oslo" }],
      ["call_b", { tz: "CET" }],
    ]);
  });
});

describe("Chat clients", () => {
  for (const model of ["gpt-native", "claude-native"]) {
    const path = model === "gpt-native" ? "native" : "translated";
    it(`gets a ${path} non-streamed answer with cost_usd`, async () => {
      rig.up.script({ kind: "text", text: "Hello there", usage });
      const res = await rig.openai().chat.completions.create({ model, max_tokens: 100, messages: [{ role: "user", content: "hi" }] });
      expect(res.choices[0]!.message.content).toBe("Hello there");
      expect(res.choices[0]!.finish_reason).toBe("stop");
      expect(res.model).toBe(model);
      expect((res.usage as unknown as { cost_usd: number }).cost_usd).toBe(cost);
    });

    it(`streams a ${path} answer with the usage chunk when include_usage is set`, async () => {
      rig.up.script({ kind: "text", text: "one two three", usage });
      const stream = await rig.openai().chat.completions.create({
        model,
        max_completion_tokens: 100,
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: "user", content: "hi" }],
      });
      let text = "";
      let last: { usage?: unknown; choices: unknown[] } | undefined;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta?.content ?? "";
        last = chunk;
      }
      expect(text).toBe("one two three");
      expect(last!.choices).toEqual([]);
      expect((last!.usage as { cost_usd: number }).cost_usd).toBe(cost);
    });

    it(`streams a ${path} answer with usage on the finish chunk when include_usage is not set`, async () => {
      rig.up.script({ kind: "text", text: "one two", usage });
      const stream = await rig.openai().chat.completions.create({ model, max_tokens: 100, stream: true, messages: [{ role: "user", content: "hi" }] });
      const chunks = [];
      for await (const chunk of stream) chunks.push(chunk);
      expect(chunks.every((c) => c.choices.length === 1)).toBe(true);
      const finish = chunks.find((c) => c.choices[0]!.finish_reason);
      expect((finish!.usage as unknown as { cost_usd: number }).cost_usd).toBe(cost);
    });

    it(`streams ${path} tool calls through the stream helper`, async () => {
      rig.up.script({ kind: "tool_calls", calls: [{ name: "a", arguments: { x: 1 } }, { name: "b", arguments: { y: "z" } }], argChunks: 4 });
      const tools = ["a", "b"].map((name) => ({ type: "function" as const, function: { name, parameters: { type: "object", properties: {} } } }));
      const final = await rig
        .openai()
        .chat.completions.stream({ model, max_tokens: 100, tools, messages: [{ role: "user", content: "go" }] })
        .finalChatCompletion();
      const calls = final.choices[0]!.message.tool_calls!;
      expect(calls.map((c) => (c.type === "function" ? [c.function.name, JSON.parse(c.function.arguments)] : null))).toEqual([
        ["a", { x: 1 }],
        ["b", { y: "z" }],
      ]);
      expect(final.choices[0]!.finish_reason).toBe("tool_calls");
    });
  }
});

describe("money on the text path", () => {
  it("charges exactly the catalog price of the reported usage, cache buckets included", async () => {
    const a = await rig.gw.account(5);
    const u = { input: 1000, output: 500, cacheRead: 2000, cacheWrite: 300 };
    rig.up.script({ kind: "text", text: "cached", usage: u });
    await rig.anthropic(a.key).messages.create({ model: "claude-native", max_tokens: 1000, messages: [{ role: "user", content: "hi" }] });
    const m = rig.gw.money(a.accountId);
    expect(5_000_000_000 - m.balance).toBe(expectedNano(u));
    expect(m.ledgerSum).toBe(m.balance);
    expect(m.openHolds).toBe(0);
  });
});
