import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import type { ResponseStreamEvent } from "openai/resources/responses/responses";
import type { JsonObject } from "../../src/wire/shapes.ts";
import type { TextRig } from "../support/text-rig.ts";
import { expectedNano } from "../support/prices.ts";
import { fixtureJson } from "../support/fixtures.ts";
import { sseFrames } from "../support/sse.ts";
import { postResponses, startResponsesRig } from "./support.ts";

// "claude-native" routes to the Anthropic mock: a Responses request becomes a chat completion,
// which the relay translates to Messages; the answer (or the event stream) comes back the other way.

let rig: TextRig;
beforeAll(async () => {
  rig = await startResponsesRig();
});
afterAll(() => rig.stop());

const model = "claude-native";
const usage = { input: 20, output: 10, cacheRead: 0, cacheWrite: 0 };
const weather = {
  type: "function" as const,
  name: "get_weather",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  strict: false,
};

/** The last request the Anthropic mock received. */
function lastMessagesCall(): { path: string; body: JsonObject } {
  const rec = rig.up.requests.at(-1)!;
  return { path: rec.path, body: rec.body as JsonObject };
}

describe("a Responses request on a Messages route", () => {
  it("answers responses.create with the text and the canonical model id", async () => {
    rig.up.script({ kind: "text", text: "Hello from Claude", usage });
    const res = await rig.openai().responses.create({ model, input: "hi" });
    expect(res.status).toBe("completed");
    expect(res.model).toBe(model);
    expect(res.output_text).toBe("Hello from Claude");
    expect((res.usage as unknown as { cost_usd: number }).cost_usd).toBe(expectedNano(usage) / 1e9);
  });

  it("sends the Anthropic upstream a Messages request with instructions as system and the output cap as max_tokens", async () => {
    await rig.openai().responses.create({ model, instructions: "Be brief.", input: "hi", max_output_tokens: 300 });
    const { path, body } = lastMessagesCall();
    expect(path).toStartWith("/v1/messages");
    expect(body).toMatchObject({ model: "claude-upstream-1", max_tokens: 300, messages: [{ role: "user" }] });
    expect(JSON.stringify(body.system)).toContain("Be brief.");
  });

  it("streams through responses.stream().finalResponse()", async () => {
    rig.up.script({ kind: "text", text: "one two three", usage });
    const res = await rig.openai().responses.stream({ model, input: "count" }).finalResponse();
    expect(res.status).toBe("completed");
    expect(res.output_text).toBe("one two three");
  });

  it("streams response.completed with usage.cost_usd", async () => {
    rig.up.script({ kind: "text", text: "one two", usage });
    const stream = rig.openai().responses.stream({ model, input: "hi" });
    const types: string[] = [];
    let completed: Extract<ResponseStreamEvent, { type: "response.completed" }> | undefined;
    for await (const ev of stream) {
      types.push(ev.type);
      if (ev.type === "response.completed") completed = ev;
    }
    expect(types[0]).toBe("response.created");
    expect(types.at(-1)).toBe("response.completed");
    expect(completed!.response.usage).toMatchObject({ input_tokens: 20, output_tokens: 10 });
    expect((completed!.response.usage as unknown as { cost_usd: number }).cost_usd).toBe(expectedNano(usage) / 1e9);
  });

  it("answers a tool_use as a function_call item", async () => {
    rig.up.script({ kind: "tool_calls", calls: [{ id: "toolu_1", name: "get_weather", arguments: { city: "Oslo" } }] });
    const res = await rig.openai().responses.create({ model, input: "weather?", tools: [weather] });
    expect(res.output).toEqual([expect.objectContaining({ type: "function_call", call_id: "toolu_1", name: "get_weather" })]);
    expect(JSON.parse((res.output[0] as { arguments: string }).arguments)).toEqual({ city: "Oslo" });
  });

  it("streams tool_use argument fragments as one function_call", async () => {
    rig.up.script({ kind: "tool_calls", calls: [{ name: "get_weather", arguments: { city: "Rome" } }], argChunks: 4 });
    const res = await rig.openai().responses.stream({ model, input: "weather?", tools: [weather] }).finalResponse();
    const calls = res.output.filter((i) => i.type === "function_call");
    expect(calls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([["get_weather", { city: "Rome" }]]);
  });

  it("sends a function_call_output upstream as a tool_result for its tool_use", async () => {
    rig.up.script({ kind: "text", text: "3 °C", usage });
    const res = await rig.openai().responses.create({
      model,
      tools: [weather],
      input: [
        { role: "user", content: "weather in Oslo?" },
        { type: "function_call", call_id: "toolu_9", name: "get_weather", arguments: '{"city":"Oslo"}' },
        { type: "function_call_output", call_id: "toolu_9", output: '{"celsius":3}' },
      ],
    });
    expect(res.output_text).toBe("3 °C");
    const messages = lastMessagesCall().body.messages as { role: string; content: JsonObject[] }[];
    expect(messages.at(-2)!.content).toEqual([expect.objectContaining({ type: "tool_use", id: "toolu_9", name: "get_weather", input: { city: "Oslo" } })]);
    expect(messages.at(-1)!.content).toEqual([{ type: "tool_result", tool_use_id: "toolu_9", content: [{ type: "text", text: '{"celsius":3}' }] }]);
  });

  it("answers incomplete with reason max_output_tokens when Claude stops at max_tokens", async () => {
    rig.up.script({ kind: "text", text: "cut", stopReason: "max_tokens", usage });
    const res = await rig.openai().responses.create({ model, input: "write a lot", max_output_tokens: 16 });
    expect(res.status).toBe("incomplete");
    expect(res.incomplete_details).toEqual({ reason: "max_output_tokens" });
  });

  it("charges the catalog price of every Anthropic usage bucket, cache writes included", async () => {
    const a = await rig.gw.account(5);
    const u = { input: 1000, output: 500, cacheRead: 2000, cacheWrite: 300 };
    rig.up.script({ kind: "text", text: "cached", usage: u });
    await rig.openai(a.key).responses.stream({ model, input: "hi", max_output_tokens: 1000 }).finalResponse();
    const m = rig.gw.money(a.accountId);
    expect(5_000_000_000 - m.balance).toBe(expectedNano(u));
    expect(m.ledgerSum).toBe(m.balance);
    expect(m.openHolds).toBe(0);
  });

  it("serves the recorded Codex request and returns a namespaced tool_use as {name, namespace}", async () => {
    const codex = { ...(await fixtureJson("responses/codex-request.json")), model, stream: true };
    rig.up.script({ kind: "tool_calls", calls: [{ id: "toolu_w", name: "multi_agent_v1__wait_agent", arguments: { targets: ["a1"] } }] });
    const res = await postResponses(rig, codex);
    const frames = sseFrames(await res.text());
    expect(res.status).toBe(200);
    expect(frames.at(-1)!.event).toBe("response.completed");
    const item = frames.find((f) => f.event === "response.output_item.done")!.data.item;
    expect(item).toMatchObject({ type: "function_call", name: "wait_agent", namespace: "multi_agent_v1", call_id: "toolu_w", arguments: '{"targets":["a1"]}' });
    const tools = lastMessagesCall().body.tools as { name: string }[];
    expect(tools.map((t) => t.name)).toContain("multi_agent_v1__wait_agent");
    expect(JSON.stringify(tools)).not.toContain("web_search");
  });
});
