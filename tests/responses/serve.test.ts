import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import type { ResponseStreamEvent } from "openai/resources/responses/responses";
import type { TextRig } from "../support/text-rig.ts";
import { expectedNano } from "../support/prices.ts";
import { lastUpstream, startResponsesRig } from "./support.ts";

// POST /v1/responses through the official openai SDK, served by the OpenAI-compatible mock behind
// "gpt-native": the request becomes a chat completion, the answer becomes a response.

let rig: TextRig;
beforeAll(async () => {
  rig = await startResponsesRig();
});
afterAll(() => rig.stop());

const model = "gpt-native";
const usage = { input: 20, output: 10, cacheRead: 0, cacheWrite: 0 };
const cost = expectedNano(usage) / 1e9;
const weather = {
  type: "function" as const,
  name: "get_weather",
  description: "Weather in a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  strict: false,
};

describe("text answers", () => {
  it("answers responses.create with one assistant message and output_text", async () => {
    rig.up.script({ kind: "text", text: "Hello there", usage });
    const res = await rig.openai().responses.create({ model, input: "hi" });
    expect(res.object).toBe("response");
    expect(res.status).toBe("completed");
    expect(res.model).toBe(model);
    expect(res.output_text).toBe("Hello there");
    expect(res.output).toHaveLength(1);
    expect(res.output[0]).toMatchObject({ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "Hello there" }] });
  });

  it("sends the upstream a chat completion with instructions as the system message", async () => {
    await rig.openai().responses.create({ model, instructions: "Be brief.", input: "hi", max_output_tokens: 64 });
    expect(lastUpstream(rig)).toMatchObject({
      model: "gpt-upstream-1",
      messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }],
      max_completion_tokens: 64,
    });
  });

  it("streams text through responses.stream().finalResponse()", async () => {
    rig.up.script({ kind: "text", text: "one two three", usage });
    const res = await rig.openai().responses.stream({ model, input: "count" }).finalResponse();
    expect(res.status).toBe("completed");
    expect(res.output_text).toBe("one two three");
  });

  it("streams the documented event order from response.created to response.completed", async () => {
    rig.up.script({ kind: "text", text: "a b", usage });
    const stream = rig.openai().responses.stream({ model, input: "hi" });
    const types: string[] = [];
    for await (const ev of stream) if (types.at(-1) !== ev.type) types.push(ev.type);
    expect(types).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
  });
});

describe("function calls", () => {
  it("answers a chat tool call as a function_call item with call_id and arguments", async () => {
    rig.up.script({ kind: "tool_calls", calls: [{ id: "call_abc", name: "get_weather", arguments: { city: "Oslo" } }] });
    const res = await rig.openai().responses.create({ model, input: "weather in Oslo?", tools: [weather] });
    expect(res.status).toBe("completed");
    expect(res.output).toHaveLength(1);
    expect(res.output[0]).toMatchObject({ type: "function_call", status: "completed", call_id: "call_abc", name: "get_weather" });
    expect(JSON.parse((res.output[0] as { arguments: string }).arguments)).toEqual({ city: "Oslo" });
  });

  it("sends function tools nested the Chat way", async () => {
    await rig.openai().responses.create({ model, input: "hi", tools: [weather], tool_choice: { type: "function", name: "get_weather" } });
    expect(lastUpstream(rig).tools).toEqual([
      { type: "function", function: { name: "get_weather", description: "Weather in a city", parameters: weather.parameters, strict: false } },
    ]);
    expect(lastUpstream(rig).tool_choice).toEqual({ type: "function", function: { name: "get_weather" } });
  });

  it("streams two tool calls whose arguments arrive in fragments", async () => {
    rig.up.script({
      kind: "tool_calls",
      calls: [{ name: "get_weather", arguments: { city: "Oslo" } }, { name: "get_weather", arguments: { city: "Rome" } }],
      argChunks: 4,
    });
    const res = await rig.openai().responses.stream({ model, input: "weather?", tools: [weather] }).finalResponse();
    const calls = res.output.filter((i) => i.type === "function_call");
    expect(calls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
      ["get_weather", { city: "Oslo" }],
      ["get_weather", { city: "Rome" }],
    ]);
    expect(new Set(calls.map((c) => c.call_id)).size).toBe(2);
  });

  it("runs a two-turn tool loop: the call and its function_call_output go back as assistant tool_calls and a tool message", async () => {
    const client = rig.openai();
    rig.up.script({ kind: "tool_calls", calls: [{ id: "call_w1", name: "get_weather", arguments: { city: "Oslo" } }] });
    const first = await client.responses.create({ model, input: "weather in Oslo?", tools: [weather], store: false });
    expect(first.output).toHaveLength(1);
    const call = first.output.find((i) => i.type === "function_call")!;

    rig.up.script({ kind: "text", text: "It is 3 °C in Oslo.", usage });
    const second = await client.responses.create({
      model,
      tools: [weather],
      store: false,
      input: [
        { role: "user", content: "weather in Oslo?" },
        call,
        { type: "function_call_output", call_id: call.call_id, output: '{"celsius":3}' },
      ],
    });
    expect(second.output_text).toBe("It is 3 °C in Oslo.");
    expect(lastUpstream(rig).messages).toEqual([
      { role: "user", content: "weather in Oslo?" },
      { role: "assistant", content: null, tool_calls: [{ id: "call_w1", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } }] },
      { role: "tool", tool_call_id: "call_w1", content: '{"celsius":3}' },
    ]);
  });
});

describe("structured output", () => {
  const format = {
    type: "json_schema" as const,
    name: "city",
    strict: true,
    schema: { type: "object", properties: { name: { type: "string" } }, required: ["name"], additionalProperties: false },
  };

  it("sends text.format json_schema upstream as response_format with the schema nested under json_schema", async () => {
    rig.up.script({ kind: "text", text: '{"name":"Oslo"}', usage });
    await rig.openai().responses.create({ model, input: "a city", text: { format } });
    expect(lastUpstream(rig).response_format).toEqual({
      type: "json_schema",
      json_schema: { name: "city", schema: format.schema, strict: true },
    });
  });

  it("parses the JSON answer for responses.parse", async () => {
    rig.up.script({ kind: "text", text: '{"name":"Oslo"}', usage });
    const res = await rig.openai().responses.parse({ model, input: "a city", text: { format } });
    expect(res.output_parsed).toEqual({ name: "Oslo" });
  });

  it("echoes text.format in the response", async () => {
    rig.up.script({ kind: "text", text: '{"name":"Oslo"}', usage });
    const res = await rig.openai().responses.create({ model, input: "a city", text: { format } });
    expect(res.text?.format).toEqual(format);
  });
});

describe("the length limit", () => {
  it("answers status incomplete with incomplete_details.reason max_output_tokens", async () => {
    rig.up.script({ kind: "text", text: "cut sho", stopReason: "length", usage });
    const res = await rig.openai().responses.create({ model, input: "write a lot", max_output_tokens: 16 });
    expect(res.status).toBe("incomplete");
    expect(res.incomplete_details).toEqual({ reason: "max_output_tokens" });
    expect(res.output[0]).toMatchObject({ type: "message", status: "incomplete" });
    expect(res.output_text).toBe("cut sho");
  });

  it("ends a stream with response.incomplete when the length limit is hit", async () => {
    rig.up.script({ kind: "text", text: "cut sho", stopReason: "length", usage });
    const stream = rig.openai().responses.stream({ model, input: "write a lot", max_output_tokens: 16 });
    const types: string[] = [];
    for await (const ev of stream) types.push(ev.type);
    const res = await stream.finalResponse();
    expect(types.at(-1)).toBe("response.incomplete");
    expect(types).not.toContain("response.completed");
    expect(res.status).toBe("incomplete");
    expect(res.incomplete_details).toEqual({ reason: "max_output_tokens" });
  });
});

describe("cost", () => {
  it("shows usage.cost_usd in the JSON answer", async () => {
    rig.up.script({ kind: "text", text: "Hello", usage });
    const res = await rig.openai().responses.create({ model, input: "hi" });
    expect(res.usage).toMatchObject({ input_tokens: 20, output_tokens: 10, total_tokens: 30 });
    expect((res.usage as unknown as { cost_usd: number }).cost_usd).toBe(cost);
  });

  it("shows usage.cost_usd in response.completed's response.usage", async () => {
    rig.up.script({ kind: "text", text: "one two", usage });
    const stream = rig.openai().responses.stream({ model, input: "hi" });
    let completed: Extract<ResponseStreamEvent, { type: "response.completed" }> | undefined;
    for await (const ev of stream) if (ev.type === "response.completed") completed = ev;
    expect(completed!.response.usage).toMatchObject({ input_tokens: 20, output_tokens: 10 });
    expect((completed!.response.usage as unknown as { cost_usd: number }).cost_usd).toBe(cost);
  });

  const bucketed = { input: 1000, output: 500, cacheRead: 2000, cacheWrite: 0 };
  for (const stream of [false, true]) {
    it(`charges a ${stream ? "streamed" : "non-streamed"} response exactly what the same chat completion costs`, async () => {
      const viaChat = await rig.gw.account(5);
      const viaResponses = await rig.gw.account(5);
      rig.up.script({ kind: "text", text: "same answer", usage: bucketed });
      const chat = await rig.openai(viaChat.key).chat.completions.create({ model, max_completion_tokens: 1000, messages: [{ role: "user", content: "hi" }] });
      rig.up.script({ kind: "text", text: "same answer", usage: bucketed });
      const res = stream
        ? await rig.openai(viaResponses.key).responses.stream({ model, input: "hi", max_output_tokens: 1000 }).finalResponse()
        : await rig.openai(viaResponses.key).responses.create({ model, input: "hi", max_output_tokens: 1000 });

      const chatCharge = 5_000_000_000 - rig.gw.money(viaChat.accountId).balance;
      const m = rig.gw.money(viaResponses.accountId);
      expect(5_000_000_000 - m.balance).toBe(chatCharge);
      expect(chatCharge).toBe(expectedNano(bucketed));
      expect((res.usage as unknown as { cost_usd: number }).cost_usd).toBe((chat.usage as unknown as { cost_usd: number }).cost_usd);
      expect(m.ledgerSum).toBe(m.balance);
      expect(m.openHolds).toBe(0);
    });
  }
});
