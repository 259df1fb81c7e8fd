import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import type { JsonObject } from "../../src/wire/shapes.ts";
import type { TextRig } from "../support/text-rig.ts";
import { startResponsesRig } from "./support.ts";

// Issue 14, wire fidelity: a multi-agent handoff (the OpenAI Agents SDK) sends the previous agent's
// tool calls and results and no tools. On a route served by a Messages-kind upstream, which refuses
// tool history without tools, the gateway declares stub tools and tool_choice none.

let rig: TextRig;
beforeAll(async () => {
  rig = await startResponsesRig();
});
afterAll(() => rig.stop());

const model = "claude-native";
const lastUpstreamBody = () => rig.up.requests.at(-1)!.body as JsonObject;

describe("a handoff history without tools on a Messages route", () => {
  it("serves a Responses request, declaring the history's tool as a stub the model cannot call", async () => {
    rig.up.script({ kind: "text", text: "Refund started." });
    const res = await rig.openai().responses.create({
      model,
      input: [
        { role: "user", content: "Refund order 42." },
        { type: "function_call", call_id: "call_1", name: "transfer_to_billing_agent", arguments: "{}" },
        { type: "function_call_output", call_id: "call_1", output: '{"assistant":"Billing Agent"}' },
      ],
    });
    expect(res.output_text).toBe("Refund started.");
    const body = lastUpstreamBody();
    expect(body.tools).toEqual([{ name: "transfer_to_billing_agent", input_schema: { type: "object" } }]);
    expect(body.tool_choice).toEqual({ type: "none" });
  });

  it("serves a Chat Completions request the same way", async () => {
    rig.up.script({ kind: "text", text: "Done." });
    const res = await rig.openai().chat.completions.create({
      model,
      max_tokens: 100,
      messages: [
        { role: "user", content: "Weather in Oslo?" },
        { role: "assistant", content: null, tool_calls: [{ id: "call_9", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } }] },
        { role: "tool", tool_call_id: "call_9", content: "3 C" },
      ],
    });
    expect(res.choices[0]!.message.content).toBe("Done.");
    expect(lastUpstreamBody()).toMatchObject({ tools: [{ name: "get_weather", input_schema: { type: "object" } }], tool_choice: { type: "none" } });
  });
});
