import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import type { JsonObject } from "../../src/wire/shapes.ts";
import { fixtureJson } from "../support/fixtures.ts";
import { codexRead } from "../support/responses.ts";
import type { TextRig } from "../support/text-rig.ts";
import { sseFrames, type SseFrame } from "../support/sse.ts";
import { CAPPED, lastUpstream, postResponses, startResponsesRig } from "./support.ts";

// The request Codex CLI really sends (tests/fixtures/responses/codex-request.json: namespace tools
// for sub-agents, a web_search it offers by default, reasoning items, store:false, stream:true),
// served end to end by the gateway and the OpenAI-compatible mock.

let rig: TextRig;
let codex: JsonObject;
beforeAll(async () => {
  rig = await startResponsesRig();
  codex = { ...(await fixtureJson("responses/codex-request.json")), model: "gpt-native", stream: true };
});
afterAll(() => rig.stop());

async function serve(body: JsonObject): Promise<{ res: Response; frames: SseFrame[] }> {
  const res = await postResponses(rig, body);
  return { res, frames: sseFrames(await res.text()) };
}

const waitAgent = { name: "multi_agent_v1__wait_agent", arguments: { targets: ["019e784d-f6a1-7353-8a64-86b20241d539"], timeout_ms: 30000 } };

describe("the recorded Codex request", () => {
  it("is served as a 200 SSE stream from response.created to response.completed", async () => {
    rig.up.script({ kind: "text", text: "The helper found the bug." });
    const { res, frames } = await serve(codex);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("text/event-stream");
    expect(res.headers.get("x-gateway-request-id")).toMatch(/^gw_/);
    expect(frames[0]!.event).toBe("response.created");
    expect(frames.at(-1)!.event).toBe("response.completed");
    expect(frames.every((f) => f.event === f.data.type)).toBe(true);
    expect(frames.map((f) => f.data.sequence_number)).toEqual(frames.map((_, i) => i));
  });

  it("reads the way Codex reads it: one completed message item, a response id, integer usage", async () => {
    rig.up.script({ kind: "text", text: "The helper found the bug.", usage: { input: 900, output: 7, cacheRead: 0, cacheWrite: 0 } });
    const turn = codexRead((await serve(codex)).frames as never);
    expect(turn.problems).toEqual([]);
    expect(turn.outcome).toBe("completed");
    expect(turn.responseId).toMatch(/^resp_/);
    expect(turn.items).toEqual([expect.objectContaining({ type: "message", status: "completed", content: [expect.objectContaining({ text: "The helper found the bug." })] })]);
    expect(turn.usage).toMatchObject({ input_tokens: 900, output_tokens: 7, total_tokens: 907 });
  });

  it("sends the upstream the namespace tools flattened as <namespace>__<name> and no web_search", async () => {
    const { res } = await serve(codex);
    expect(res.status).toBe(200);
    const up = lastUpstream(rig);
    expect((up.tools as { type: string; function: { name: string } }[]).map((t) => t.function.name)).toEqual([
      "exec_command",
      "write_stdin",
      "update_plan",
      "view_image",
      "multi_agent_v1__spawn_agent",
      "multi_agent_v1__send_input",
      "multi_agent_v1__wait_agent",
      "multi_agent_v1__close_agent",
    ]);
    expect(JSON.stringify(up)).not.toContain("web_search");
    expect(res.headers.get("x-gateway-dropped-tools")).toBe("web_search");
  });

  it("sends a namespaced call from the history under its flattened name, next to its output", async () => {
    await serve(codex);
    const messages = lastUpstream(rig).messages as JsonObject[];
    const spawn = messages.find((m) => (m.tool_calls as JsonObject[] | undefined)?.some((c) => c.id === "call_x7KpWq3ZtE1u"));
    expect((spawn!.tool_calls as { function: { name: string } }[])[0]!.function.name).toBe("multi_agent_v1__spawn_agent");
    expect(messages.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_x7KpWq3ZtE1u" });
  });

  it("returns a call to a namespaced tool in output_item.done with the bare name and its namespace", async () => {
    rig.up.script({ kind: "tool_calls", calls: [{ id: "call_wait1", ...waitAgent }], argChunks: 3 });
    const { frames } = await serve(codex);
    const done = frames.filter((f) => f.event === "response.output_item.done").map((f) => f.data.item as JsonObject);
    expect(done).toHaveLength(1);
    expect(done[0]).toMatchObject({ type: "function_call", name: "wait_agent", namespace: "multi_agent_v1", call_id: "call_wait1", status: "completed" });
    expect(JSON.parse(done[0]!.arguments as string)).toEqual(waitAgent.arguments);
    expect(frames.at(-1)!.event).toBe("response.completed");
  });

  it("returns a call to a top-level tool without a namespace", async () => {
    rig.up.script({ kind: "tool_calls", calls: [{ name: "exec_command", arguments: { cmd: "bun test" } }] });
    const { frames } = await serve(codex);
    const item = frames.find((f) => f.event === "response.output_item.done")!.data.item as JsonObject;
    expect(item).toMatchObject({ type: "function_call", name: "exec_command" });
    expect(item).not.toHaveProperty("namespace");
  });

  it("leaves the replayed reasoning item out of the upstream call", async () => {
    await serve(codex);
    expect(JSON.stringify(lastUpstream(rig).messages)).not.toContain("encrypted_content");
    expect(JSON.stringify(lastUpstream(rig).messages)).not.toContain("Running the test suite");
  });
});

describe("the output cap", () => {
  it("without max_output_tokens, sends the upstream the catalog default of 32000, not a small invented cap", async () => {
    await serve(codex);
    expect(lastUpstream(rig).max_completion_tokens).toBe(32_000);
  });

  it("without max_output_tokens, sends the upstream the model's own max_output_tokens from the catalog", async () => {
    await serve({ ...codex, model: CAPPED.id });
    expect(lastUpstream(rig)).toMatchObject({ model: "gpt-upstream-2", max_completion_tokens: CAPPED.maxOutputTokens });
  });

  it("sends the request's own max_output_tokens when it names one", async () => {
    await serve({ ...codex, max_output_tokens: 2048 });
    expect(lastUpstream(rig).max_completion_tokens).toBe(2048);
  });
});
