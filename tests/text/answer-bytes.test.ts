import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { postWithApiKey } from "../support/keyed.ts";
import { startTextRig, type TextRig } from "../support/text-rig.ts";

// A plain (non-stream) answer on a native route is the upstream's JSON, parsed, with the model named
// as the client asked and the cost added, serialised again: byte for byte JSON.stringify of that
// object, whatever the upstream's spacing, escapes and numbers looked like.

let rig: TextRig;
beforeAll(async () => {
  rig = await startTextRig();
});
afterAll(() => rig.stop());

type Obj = Record<string, unknown>;

/** The upstream's answer as written: pretty-printed, escaped non-ASCII and slashes, a lone surrogate, unusual numbers. */
const CHAT_TEXT = `{
  "id": "chatcmpl-\\u00e9\\/1",
  "object": "chat.completion",
  "created": 1.7e9,
  "model": "gpt-upstream-1",
  "choices": [ { "index": 0, "message": { "role": "assistant", "content": "caf\\u00e9 \u{1F600} \\ud800 \\"q\\" \\\\ \\u2028 \\t\\u0001", "refusal": null },
    "logprobs": { "content": [ { "token": "x", "logprob": -0.0000001234, "bytes": [ 120 ] } ] }, "finish_reason": "stop" } ],
  "usage": { "prompt_tokens": 12, "completion_tokens": 5.0, "total_tokens": 17, "prompt_tokens_details": { "cached_tokens": 0 } },
  "system_fingerprint": "fp_\\u0041"
}`;
const MESSAGES_TEXT =
  '{"id":"msg_1","type":"message","role":"assistant","model":"claude-upstream-1","content":[{"type":"text","text":"Gr\\u00fc\\u00dfe \\ud83d\\ude00 \u00e9 \\/ \\u0000"}],' +
  '"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":4,"service_tier":"standard"},"extra":1E2}';

/** What the client should get: the upstream's parse, renamed, with the usage the client got (the cost, or the estimate and its cost). */
function expected(upstreamText: string, model: string, got: Obj): string {
  const answer = JSON.parse(upstreamText) as Obj;
  answer.model = model;
  answer.usage = got.usage;
  return JSON.stringify(answer);
}

async function relayed(path: string, model: string, upstreamText: string): Promise<{ bytes: Buffer; json: Obj }> {
  rig.up.script({ kind: "raw", status: 200, body: upstreamText, headers: { "content-type": "application/json" } });
  const res = await postWithApiKey(rig.gw, path, { model, max_tokens: 20, messages: [{ role: "user", content: "hi" }] }, rig.acct.key);
  expect(res.status).toBe(200);
  const bytes = Buffer.from(await res.arrayBuffer());
  return { bytes, json: JSON.parse(bytes.toString("utf8")) as Obj };
}

describe("a plain native answer's body", () => {
  const cases: [string, string, string, string][] = [
    ["chat, with usage", "/v1/chat/completions", "gpt-native", CHAT_TEXT],
    ["chat, without usage", "/v1/chat/completions", "gpt-native", JSON.stringify({ ...JSON.parse(CHAT_TEXT), usage: undefined })],
    ["messages, with usage", "/v1/messages", "claude-native", MESSAGES_TEXT],
    ["messages, without usage", "/v1/messages", "claude-native", MESSAGES_TEXT.replace(/"usage":\{[^}]*\},/, "")],
  ];
  for (const [name, path, model, text] of cases) {
    it(`is JSON.stringify of the upstream's answer with the model and cost in it (${name})`, async () => {
      const { bytes, json } = await relayed(path, model, text);
      expect(typeof (json.usage as Obj).cost_usd).toBe("number");
      expect(bytes.equals(Buffer.from(expected(text, model, json), "utf8"))).toBe(true);
    });
  }
});
