import { describe, expect, it } from "bun:test";
import type { Route } from "../../src/catalog/catalog.ts";
import { responsesRequestToChat } from "../../src/dialects/responses-via-chat/request.ts";
import { serialisedMembers, upstreamBody } from "../../src/relay/adapters.ts";
import { MemberText } from "../../src/wire/member-text.ts";
import type { JsonObject } from "../../src/wire/shapes.ts";
import { agentBody } from "../../bench/lib/agent-bodies.ts";

// The Responses adapter serialises its Chat translation once, member by member; each route's body is
// those members joined again. What goes upstream must be what the splice of the serialised bytes, or
// a second JSON.stringify, sent before.

const route = (max_tokens_field?: string, upstreamModel = "up-1") =>
  ({ key: "p/x", upstreamModel, provider: { id: "p", kind: "openai", max_tokens_field }, capabilities: {} }) as unknown as Route;

const odd = "sé ✓ 😀 \u2028 日本 \"quoted\"\n\t\\";
const requests: JsonObject[] = [
  JSON.parse(agentBody("responses", 20, "gw", false)),
  JSON.parse(agentBody("responses", 20, "gw", true)),
  {
    model: "gw", instructions: odd, input: [{ role: "user", content: odd }], stream: true, temperature: 0.5, top_p: 0.3,
    tools: [{ type: "function", name: "f", description: odd, parameters: { type: "object" } }], tool_choice: "auto",
    parallel_tool_calls: false, reasoning: { effort: "high" }, user: "u", max_output_tokens: 5000,
  },
];

/** What a chat route got before: the serialised bytes spliced when the splice may, else the route's body serialised again. */
async function sentBefore(chat: JsonObject, r: Route): Promise<string> {
  const out = upstreamBody("chat", "chat", chat, r, Buffer.from(JSON.stringify(chat)));
  if (out.bytes === undefined) return JSON.stringify(out.body);
  return out.bytes instanceof Blob ? await out.bytes.text() : Buffer.from(out.bytes as Uint8Array).toString();
}

describe("a translation's members", () => {
  it("join again into JSON.stringify of a copy with members replaced, renamed, added and left out", () => {
    const body: JsonObject = { model: "a", messages: [{ role: "user", content: odd }], max_completion_tokens: 9, tools: [{ x: [1, null] }], gone: undefined };
    const members = MemberText.of(body);
    expect(members.text(body)).toBe(JSON.stringify(body));
    const out: JsonObject = { ...body, model: "ü-up", extra: { include_usage: true }, skipped: undefined };
    delete out.max_completion_tokens;
    out.max_tokens = 9;
    expect(members.text(out)).toBe(JSON.stringify(out));
  });

  it("measure the UTF-8 bytes and characters JSON.stringify writes", () => {
    for (const body of [{}, { model: odd }, { a: 1, b: [odd, "\ud800"], c: { [odd]: odd } }]) {
      const text = JSON.stringify(body);
      expect(MemberText.of(body)).toMatchObject({ bytes: Buffer.byteLength(text), chars: text.length });
    }
  });

  it("send every chat route what the splice or a second serialisation sent, for each cap field and stream", async () => {
    for (const request of requests) {
      const chat = responsesRequestToChat(request, { upstreamModel: "gw", defaultMaxOutputTokens: 4096 }).body as JsonObject;
      const { members, size } = serialisedMembers(chat);
      expect(size).toEqual({ bytes: Buffer.byteLength(JSON.stringify(chat)), chars: JSON.stringify(chat).length });
      for (const r of [route(), route("max_tokens"), route("max_completion_tokens"), route(undefined, "ü-longer-upstream-name")]) {
        const out = upstreamBody("chat", "chat", chat, r, members);
        expect(out.bytes).toBe(await sentBefore(chat, r));
        expect(JSON.parse(out.bytes as string)).toEqual(out.body);
      }
    }
  });
});
