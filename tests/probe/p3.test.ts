import { afterAll, beforeAll, it } from "bun:test";
import { sse } from "../support/sse.ts";
import { startTextRig, type TextRig } from "../support/text-rig.ts";
import { keyHeaders, send } from "../support/http.ts";
let rig: TextRig;
beforeAll(async () => { rig = await startTextRig(); });
afterAll(() => rig.stop());
const chunk = (delta: object, finish: string | null = null) => sse(undefined, { id: "chatcmpl-p1", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] });
it("raw responses stream tools", async () => {
  rig.up.script({ kind: "tool_calls", calls: [{ name: "w", arguments: { a: 1 } }], text: "hi", argChunks: 2 });
  const r = await send(rig.gw, "/v1/responses", { method: "POST", headers: keyHeaders(rig.acct.key), body: JSON.stringify({ model: "gpt-native", input: "x", stream: true, tools: [{ type: "function", name: "w", parameters: { type: "object" }, strict: false }] }) });
  console.log((await r.text()).split("\n").filter((l) => l.startsWith("data")).map((l) => l.slice(0, 260)).join("\n"));
});
it("raw responses stream error", async () => {
  rig.up.script({ kind: "raw", headers: { "content-type": "text/event-stream" }, body: chunk({ role: "assistant", content: "a" }) + sse(undefined, { error: { message: "bad", type: "server_error", code: "x" } }) });
  const r = await send(rig.gw, "/v1/responses", { method: "POST", headers: keyHeaders(rig.acct.key), body: JSON.stringify({ model: "gpt-native", input: "x", stream: true }) });
  console.log((await r.text()).split("\n").filter((l) => l.startsWith("data") || l.startsWith("event")).map((l) => l.slice(0, 300)).join("\n"));
});
it("raw messages stream from chat", async () => {
  rig.up.script({ kind: "tool_calls", calls: [{ name: "w", arguments: { a: 1 } }], text: "hi", argChunks: 2 });
  const r = await send(rig.gw, "/v1/messages", { method: "POST", headers: keyHeaders(rig.acct.key), body: JSON.stringify({ model: "gpt-native", max_tokens: 50, messages: [{ role: "user", content: "x" }], stream: true, tools: [{ name: "w", input_schema: { type: "object" } }] }) });
  console.log(await r.text());
});
it("raw chat stream from messages", async () => {
  rig.up.script({ kind: "thinking", thinking: "hmm", text: "hi there" });
  const r = await send(rig.gw, "/v1/chat/completions", { method: "POST", headers: keyHeaders(rig.acct.key), body: JSON.stringify({ model: "claude-native", max_tokens: 50, messages: [{ role: "user", content: "x" }], stream: true, stream_options: { include_usage: true } }) });
  console.log(await r.text());
});
