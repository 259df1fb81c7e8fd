import { describe, expect, it } from "bun:test";
import type { TokenUsage } from "../../src/core/money.ts";
import { ResponsesEventEncoder } from "../../src/dialects/responses-via-chat/encode.ts";
import { responsesRequestToChat } from "../../src/dialects/responses-via-chat/request.ts";
import { ResponsesViaChatStream } from "../../src/dialects/responses-via-chat/stream.ts";
import type { ResponsesEvent, ResponsesRequest } from "../../src/dialects/responses-via-chat/types.ts";
import { encodeEvents } from "../../src/dialects/stream-machine.ts";
import type { ChatChunk } from "../../src/wire/shapes.ts";
import { chatChunks, fixtureJson } from "../support/fixtures.ts";

const costOf = (u: TokenUsage) => u.input * 2 + u.output * 10;

async function codexStream(request: ResponsesRequest, chunks: ChatChunk[], fail = false): Promise<ResponsesEvent[]> {
  const { toolNames } = responsesRequestToChat(request, { upstreamModel: "up", defaultMaxOutputTokens: 64000 });
  const s = new ResponsesViaChatStream({ model: "gw-coder", request, toolNames, costOf, estimatedInputTokens: 100 });
  const events = s.start();
  for (const c of chunks) events.push(...s.push(c));
  events.push(...(fail ? s.fail("upstream_unavailable", "gone") : s.done()));
  return events;
}

describe("the Responses stream's SSE text", () => {
  it("is byte for byte what JSON.stringify writes for every event of a Codex tool-call stream", async () => {
    const request = await fixtureJson<ResponsesRequest>("responses/codex-request.json");
    const events = await codexStream(request, await chatChunks("responses/codex-tools.chat.sse"));
    expect(new ResponsesEventEncoder(request).encode(events)).toBe(encodeEvents(events));
  });

  it("is what JSON.stringify writes for response.failed, which echoes the request as well", async () => {
    const request = await fixtureJson<ResponsesRequest>("responses/codex-request.json");
    const events = await codexStream(request, [], true);
    expect(events.at(-1)!.event).toBe("response.failed");
    expect(new ResponsesEventEncoder(request).encode(events)).toBe(encodeEvents(events));
  });

  it("writes a response's own instructions and tools when they are not the request's", () => {
    const request = { model: "m", input: "Hi", instructions: "Be brief.", tools: [{ type: "function", name: "a" }] } as ResponsesRequest;
    const encoder = new ResponsesEventEncoder(request);
    encoder.encode([{ event: "response.created", data: { type: "response.created", response: { instructions: "Be brief.", tools: request.tools! } } }]);
    const other: ResponsesEvent = { event: "response.completed", data: { type: "response.completed", response: { instructions: "Other.", tools: [{ type: "function", name: "b" }] } } };
    expect(encoder.encode([other])).toBe(encodeEvents([other]));
  });

  it("leaves out undefined fields and keeps null ones, as JSON.stringify does", () => {
    const encoder = new ResponsesEventEncoder({ model: "m", input: "Hi" } as ResponsesRequest);
    const event: ResponsesEvent = { event: "response.created", data: { type: "response.created", skipped: undefined, response: { instructions: null, tools: [], gone: undefined } } };
    expect(encoder.encode([event])).toBe(encodeEvents([event]));
  });

  it("writes events without a response object as JSON.stringify does", () => {
    const event: ResponsesEvent = { event: "response.output_text.delta", data: { type: "response.output_text.delta", delta: "a\"b\u2028" } };
    expect(new ResponsesEventEncoder({ model: "m", input: "Hi" } as ResponsesRequest).encode([event])).toBe(encodeEvents([event]));
  });
});
