// The mock upstream speaks the vendors' wire formats well enough for the official SDKs, and
// misbehaves exactly as scripted. Anthropic and mechanics here; OpenAI in mock-upstream.openai.test.ts.
import { afterAll, beforeEach, describe, expect, it } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import { anthropicError, startMockUpstream, type MockUpstream, type RecordedRequest } from "./mock-upstream.ts";

let up: MockUpstream;
let client: Anthropic;
const params = { model: "claude-mock", max_tokens: 100, messages: [{ role: "user" as const, content: "Hi there" }] };

up = await startMockUpstream();
client = new Anthropic({ baseURL: up.url, apiKey: "sk-ant-test", maxRetries: 0 });
afterAll(() => up.stop());
beforeEach(() => up.reset());

/** Raw SSE events of a streamed request, as the SDK yields them. */
async function eventTypes(body: Record<string, unknown> = {}): Promise<{ type: string; [k: string]: unknown }[]> {
  const stream = await client.messages.create({ ...params, ...body, stream: true });
  const out: { type: string }[] = [];
  for await (const ev of stream) out.push(ev as { type: string });
  return out as { type: string; [k: string]: unknown }[];
}

describe("Anthropic Messages", () => {
  it("answers a non-stream request with a Message and usage derived from the sizes", async () => {
    up.script({ kind: "text", text: "Hello, world!" });
    const msg = await client.messages.create(params);
    expect(msg.content).toMatchObject([{ type: "text", text: "Hello, world!" }]);
    expect(msg.model).toBe("claude-mock");
    expect(msg.stop_reason).toBe("end_turn");
    const rec = up.requests[0]!;
    expect(msg.usage.input_tokens).toBe(Math.ceil(rec.rawBody.length / 4));
    expect(msg.usage.output_tokens).toBe(Math.ceil("Hello, world!".length / 4));
    expect(msg.usage.cache_read_input_tokens).toBe(0);
    expect(msg._request_id).toStartWith("req_");
  });

  it("records method, path with query, lowercased headers and the parsed body", async () => {
    await client.messages.create(params);
    await fetch(`${up.url}/v1/messages?beta=true`, { method: "POST", headers: { "X-Api-Key": "k2" }, body: "not json" });
    const [sdk, raw] = up.requests as [RecordedRequest, RecordedRequest];
    expect(sdk).toMatchObject({ method: "POST", path: "/v1/messages", route: "POST /v1/messages", aborted: false });
    expect(sdk.headers["user-agent"]).toStartWith("Anthropic/JS");
    expect(sdk.headers["anthropic-version"]).toBeString();
    expect(sdk.body).toMatchObject({ model: "claude-mock", max_tokens: 100 });
    expect(await sdk.settled).toBe("completed");
    expect(raw).toMatchObject({ path: "/v1/messages?beta=true", route: "POST /v1/messages", body: "not json" });
    expect(raw.headers["x-api-key"]).toBe("k2");
  });

  it("streams the SDK's event order and finalMessage() assembles the text", async () => {
    up.script({ kind: "text", text: "one two three four", chunks: 2 }, { kind: "text", text: "a b c" });
    const final = await client.messages.stream(params).finalMessage();
    expect(final.content).toMatchObject([{ type: "text", text: "one two three four" }]);
    expect(final.usage.output_tokens).toBe(Math.ceil(18 / 4));
    expect(final.usage.input_tokens).toBeGreaterThan(10);
    const types = (await eventTypes()).map((e) => e.type);
    expect(types).toEqual([
      "message_start", "content_block_start", "content_block_delta", "content_block_delta",
      "content_block_delta", "content_block_stop", "message_delta", "message_stop",
    ]);
  });

  it("sends the requested cache counts and a cumulative message_delta usage", async () => {
    up.script({ kind: "text", text: "x", usage: { input: 7, output: 42, cacheRead: 100, cacheWrite: 20 } });
    const events = await eventTypes();
    const start = events[0] as unknown as { message: { usage: Record<string, number> } };
    expect(start.message.usage).toMatchObject({ input_tokens: 7, cache_read_input_tokens: 100, cache_creation_input_tokens: 20, output_tokens: 1 });
    const delta = events.find((e) => e.type === "message_delta") as unknown as { usage: Record<string, number> };
    expect(delta.usage).toEqual({ input_tokens: 7, output_tokens: 42, cache_read_input_tokens: 100, cache_creation_input_tokens: 20 });
  });

  it("streams tool_use blocks with input_json_delta fragments", async () => {
    const calls = [{ id: "toolu_fixed", name: "get_weather", arguments: { city: "Oslo", days: 3 } }, { name: "noop", arguments: {} }];
    up.script({ kind: "tool_calls", text: "Let me check.", calls, argChunks: 4 }, { kind: "tool_calls", calls, argChunks: 4 });
    const final = await client.messages.stream(params).finalMessage();
    expect(final.stop_reason).toBe("tool_use");
    expect(final.content[0]).toMatchObject({ type: "text", text: "Let me check." });
    expect(final.content[1]).toMatchObject({ type: "tool_use", id: "toolu_fixed", name: "get_weather", input: { city: "Oslo", days: 3 } });
    expect(final.content[2]).toMatchObject({ type: "tool_use", name: "noop", input: {} });
    expect((final.content[2] as { id: string }).id).toStartWith("toolu_");
    const fragments = (await eventTypes()).filter((e) => e.type === "content_block_delta" && e.index === 0);
    expect(fragments).toHaveLength(4);
  });

  it("answers tool calls without streaming as tool_use blocks with object input", async () => {
    up.script({ kind: "tool_calls", calls: [{ name: "f", arguments: { a: 1 } }] });
    const msg = await client.messages.create(params);
    expect(msg.content).toMatchObject([{ type: "tool_use", name: "f", input: { a: 1 } }]);
    expect(msg.stop_reason).toBe("tool_use");
  });

  it("streams a signed thinking block before the text", async () => {
    up.script({ kind: "thinking", thinking: "Let me think about it.", text: "42" });
    const final = await client.messages.stream(params).finalMessage();
    expect(final.content[0]).toMatchObject({ type: "thinking", thinking: "Let me think about it." });
    expect((final.content[0] as { signature: string }).signature.length).toBeGreaterThan(10);
    expect(final.content[1]).toMatchObject({ type: "text", text: "42" });
  });

  it("maps stop reasons and stop sequences", async () => {
    up.script({ kind: "text", text: "x", stopReason: "length" }, { kind: "text", text: "y", stopSequence: "END" });
    expect((await client.messages.create(params)).stop_reason).toBe("max_tokens");
    const msg = await client.messages.create(params);
    expect([msg.stop_reason, msg.stop_sequence]).toEqual(["stop_sequence", "END"]);
  });

  it("surfaces scripted errors as the SDK's classes with the vendor's type", async () => {
    up.script(
      { kind: "error", status: 401 },
      { kind: "error", status: 529 },
      { kind: "error", status: 400, body: anthropicError("invalid_request_error", "messages.0.content.1: nope"), headers: { "x-should-retry": "false" } },
    );
    const e401 = await client.messages.create(params).catch((e) => e);
    expect(e401).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(e401.type).toBe("authentication_error");
    expect(e401.requestID).toStartWith("req_");
    const e529 = await client.messages.create(params).catch((e) => e);
    expect(e529).toBeInstanceOf(Anthropic.InternalServerError);
    expect([e529.status, e529.type]).toEqual([529, "overloaded_error"]);
    const e400 = await client.messages.create(params).catch((e) => e);
    expect(e400).toBeInstanceOf(Anthropic.BadRequestError);
    expect(e400.error.error.message).toBe("messages.0.content.1: nope");
  });

  it("a mid-stream error event throws APIError with no status", async () => {
    up.script({ kind: "fail_mid_stream", afterEvents: 3, mode: "error_event" });
    const err = await client.messages.stream(params).finalMessage().catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect(err.status).toBeUndefined();
    expect(err.type).toBe("overloaded_error");
  });

  it("a mid-stream drop rejects the stream after the first events arrived", async () => {
    up.script({ kind: "fail_mid_stream", afterEvents: 3, mode: "drop" });
    const seen: string[] = [];
    const err = await (async () => {
      for await (const ev of await client.messages.create({ ...params, stream: true })) seen.push(ev.type);
    })().catch((e) => e);
    expect(err).toBeInstanceOf(Error);
    expect(seen).toEqual(["message_start", "content_block_start"]); // the third event was the ping
    expect(await up.requests[0]!.settled).toBe("dropped");
    expect(up.requests[0]!.aborted).toBe(false);
  });

  it("drop_before_headers surfaces as a connection error", async () => {
    up.script({ kind: "drop_before_headers" });
    const err = await client.messages.create(params).catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.APIConnectionError);
    expect(up.requests[0]!.outcome).toBe("dropped");
  });
});

describe("mechanics", () => {
  it("consumes scripts in order, then falls back to the default", async () => {
    up.script({ kind: "text", text: "first" }, { kind: "text", text: "second" });
    expect(up.pending).toBe(2);
    up.setDefault({ kind: "text", text: "default" });
    const texts: string[] = [];
    for (let i = 0; i < 3; i++) {
      const msg = await client.messages.create(params);
      texts.push((msg.content[0] as { text: string }).text);
    }
    expect(texts).toEqual(["first", "second", "default"]);
    expect(up.hits).toEqual({ "POST /v1/messages": 3 });
    up.reset();
    expect([up.requests.length, up.pending, up.hits]).toEqual([0, 0, {}]);
  });

  it("a hang outlasts the client's timeout and records the abort", async () => {
    up.script({ kind: "hang", ms: 2_000 });
    const started = Date.now();
    const err = await client.messages.create(params, { timeout: 100 }).catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.APIConnectionTimeoutError);
    expect(await up.requests[0]!.settled).toBe("aborted");
    expect(up.requests[0]!.aborted).toBe(true);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it("a hang can answer late with another behaviour", async () => {
    up.script({ kind: "hang", ms: 50, then: { kind: "text", text: "late" } });
    const msg = await client.messages.create(params);
    expect(msg.content[0]).toMatchObject({ text: "late" });
  });

  it("a slow stream records that the client cancelled it", async () => {
    up.script({ kind: "slow_stream", events: 50, intervalMs: 20 });
    const stream = client.messages.stream(params);
    let deltas = 0;
    const err = await (async () => {
      for await (const ev of stream) if (ev.type === "content_block_delta" && ++deltas === 2) stream.abort();
    })().catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.APIUserAbortError);
    const rec = up.requests[0]!;
    expect(await rec.settled).toBe("aborted");
    expect(rec.aborted).toBe(true);
  });

  it("paces every stream when started with paceMs", async () => {
    await using paced = await startMockUpstream({ paceMs: 15, default: { kind: "text", text: "a b c d" } });
    const c = new Anthropic({ baseURL: paced.url, apiKey: "k", maxRetries: 0 });
    const started = performance.now();
    await c.messages.stream(params).finalMessage();
    // 11 events → 10 pauses of 15 ms (timers may fire a little early)
    expect(performance.now() - started).toBeGreaterThanOrEqual(120);
  });

  it("answers unknown routes with 404 without consuming the script, and HEAD / with 200", async () => {
    up.script({ kind: "text", text: "kept" });
    const res = await fetch(`${up.url}/v1/nope`, { method: "POST", body: "{}" });
    expect(res.status).toBe(404);
    expect((await fetch(up.url, { method: "HEAD" })).status).toBe(200);
    expect(up.pending).toBe(1);
    expect(up.requests[0]!.behaviour).toBeNull();
  });

  it("raw sends exactly what it is given", async () => {
    up.script({ kind: "raw", status: 200, headers: { "content-type": "text/html" }, body: "<html>oops</html>" });
    const res = await fetch(`${up.url}/v1/messages`, { method: "POST", body: "{}" });
    expect([res.status, res.headers.get("content-type"), await res.text()]).toEqual([200, "text/html", "<html>oops</html>"]);
  });
});
