import { afterAll, beforeAll, it } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { sse } from "../support/sse.ts";
import { startHostileRig, type HostileRig } from "../hostile/rig.ts";
let rig: HostileRig;
beforeAll(async () => { rig = await startHostileRig(); });
afterAll(() => rig.stop());
const bytewise = (s: string) => { const b = new TextEncoder().encode(s); let i = 0; return new ReadableStream<Uint8Array>({ pull(c) { if (i < b.length) c.enqueue(b.subarray(i, ++i)); else c.close(); } }); };
it("messages client, chat upstream, bytewise", async () => {
  const chunk = (delta: object, finish: string | null = null) => sse(undefined, { id: "chatcmpl-p1", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] });
  const body = chunk({ role: "assistant", content: "" }) + chunk({ content: "naïve 🦀 " }) + chunk({ tool_calls: [{ index: 0, id: "c1", type: "function", function: { name: "w", arguments: '{"q":"日本' } }] }) + chunk({ tool_calls: [{ index: 0, function: { arguments: '語"}' } }] }) + chunk({}, "tool_calls") + sse(undefined, { id: "x", object: "chat.completion.chunk", choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } }) + sse(undefined, "[DONE]");
  rig.raw.handle = () => new Response(bytewise(body), { headers: { "content-type": "text/event-stream" } });
  const a = new Anthropic({ baseURL: rig.gw.url, apiKey: rig.acct.key, maxRetries: 0 });
  const m = await a.messages.stream({ model: "raw-openai", max_tokens: 50, messages: [{ role: "user", content: "x" }], tools: [{ name: "w", input_schema: { type: "object" } }] }).finalMessage();
  console.log(JSON.stringify(m.content));
});
it("chat client, anthropic upstream, bytewise", async () => {
  const ev = (e: string, d: object) => sse(e, { type: e, ...d });
  const body = ev("message_start", { message: { id: "msg_1", type: "message", role: "assistant", model: "x", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } } })
    + ev("content_block_start", { index: 0, content_block: { type: "text", text: "" } }) + ev("content_block_delta", { index: 0, delta: { type: "text_delta", text: "naïve 🦀 日本語" } }) + ev("content_block_stop", { index: 0 })
    + ev("message_delta", { delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 5 } }) + ev("message_stop", {});
  rig.raw.handle = () => new Response(bytewise(body), { headers: { "content-type": "text/event-stream" } });
  const o = new OpenAI({ baseURL: `${rig.gw.url}/v1`, apiKey: rig.acct.key, maxRetries: 0 });
  const r = await o.chat.completions.stream({ model: "raw", max_tokens: 50, messages: [{ role: "user", content: "x" }] }).finalChatCompletion();
  console.log(JSON.stringify(r.choices[0]!.message));
});
