// The mock upstream's OpenAI side (chat completions and images), driven by the official SDK.
import { afterAll, beforeEach, describe, expect, it } from "bun:test";
import { inflateSync } from "node:zlib";
import OpenAI, { toFile } from "openai";
import { crc32, encodePng, openaiError, readPngSize, startMockUpstream, type MockFile, type MockUpstream } from "./mock-upstream.ts";

const up: MockUpstream = await startMockUpstream();
const client = new OpenAI({ baseURL: up.openaiURL, apiKey: "sk-test", maxRetries: 0 });
afterAll(() => up.stop());
beforeEach(() => up.reset());

const params = { model: "gpt-mock", messages: [{ role: "user" as const, content: "Hi there" }] };

async function chunks(extra: Record<string, unknown> = {}): Promise<OpenAI.ChatCompletionChunk[]> {
  const out: OpenAI.ChatCompletionChunk[] = [];
  for await (const c of await client.chat.completions.create({ ...params, ...extra, stream: true })) out.push(c);
  return out;
}

describe("OpenAI Chat Completions", () => {
  it("answers a non-stream request with a chat.completion and usage", async () => {
    up.script({ kind: "text", text: "Hello!", usage: { input: 10, cacheRead: 30, output: 5 } });
    const res = await client.chat.completions.create(params);
    expect(res.object).toBe("chat.completion");
    expect(res.model).toBe("gpt-mock");
    expect(res.choices[0]).toMatchObject({ index: 0, finish_reason: "stop", message: { role: "assistant", content: "Hello!" } });
    expect(res.usage).toMatchObject({ prompt_tokens: 40, completion_tokens: 5, total_tokens: 45, prompt_tokens_details: { cached_tokens: 30 } });
    expect(res._request_id).toStartWith("req_");
    expect(up.requests[0]!.headers.authorization).toBe("Bearer sk-test");
  });

  it("streams role, content and finish chunks, then [DONE], without a usage chunk unless asked", async () => {
    up.script({ kind: "text", text: "a b c" });
    const got = await chunks();
    expect(got.map((c) => c.choices[0]?.delta)).toEqual([
      { role: "assistant", content: "", refusal: null }, { content: "a " }, { content: "b " }, { content: "c" }, {},
    ] as never);
    expect(got.at(-1)!.choices[0]!.finish_reason).toBe("stop");
    expect(new Set(got.map((c) => c.id)).size).toBe(1);
    expect(got.every((c) => c.choices.length === 1 && !("usage" in c))).toBe(true);
    expect(up.requests[0]!.rawBody).toContain('"stream":true');
  });

  it("ends with a choices:[] usage chunk when stream_options.include_usage is set", async () => {
    up.script({ kind: "text", text: "Hello there", usage: { input: 3, output: 7 } });
    const final = await client.chat.completions
      .stream({ ...params, stream_options: { include_usage: true } })
      .finalChatCompletion();
    expect(final.choices[0]!.message.content).toBe("Hello there");
    expect(final.usage).toMatchObject({ prompt_tokens: 3, completion_tokens: 7, total_tokens: 10 });
    const got = await chunks({ stream_options: { include_usage: true } });
    expect(got.at(-1)!.choices).toEqual([]);
    expect(got.at(-1)!.usage!.prompt_tokens).toBeGreaterThan(5);
  });

  it("streams tool calls as a first fragment with id and name, then argument fragments", async () => {
    const calls = [{ name: "get_weather", arguments: { city: "Oslo" } }, { id: "call_fixed", name: "f", arguments: { a: [1, 2] } }];
    up.script({ kind: "tool_calls", calls, argChunks: 3 }, { kind: "tool_calls", calls, argChunks: 3 });
    const final = await client.chat.completions.stream(params).finalChatCompletion();
    const choice = final.choices[0]!;
    expect(choice.finish_reason).toBe("tool_calls");
    const tc = choice.message.tool_calls as OpenAI.ChatCompletionMessageFunctionToolCall[];
    expect(tc.map((t) => [t.function.name, JSON.parse(t.function.arguments)])).toEqual([["get_weather", { city: "Oslo" }], ["f", { a: [1, 2] }]]);
    expect(tc[0]!.id).toStartWith("call_");
    expect(tc[1]!.id).toBe("call_fixed");
    const fragments = (await chunks()).flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(fragments.map((f) => f.index)).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
    expect(fragments[0]).toMatchObject({ index: 0, type: "function", function: { name: "get_weather", arguments: "" } });
    expect(fragments[1]).toEqual({ index: 0, function: { arguments: expect.any(String) } } as never);
  });

  it("sends thinking as reasoning_content", async () => {
    up.script({ kind: "thinking", thinking: "hmm ok", text: "42" }, { kind: "thinking", thinking: "hmm", text: "42" });
    const got = await chunks();
    const reasoning = got.map((c) => (c.choices[0]?.delta as { reasoning_content?: string }).reasoning_content ?? "").join("");
    expect(reasoning).toBe("hmm ok");
    const res = await client.chat.completions.create(params);
    expect((res.choices[0]!.message as unknown as { reasoning_content: string }).reasoning_content).toBe("hmm");
    expect(res.usage!.completion_tokens_details!.reasoning_tokens).toBe(1);
  });

  it("surfaces scripted errors as the SDK's classes with type and code", async () => {
    up.script(
      { kind: "error", status: 429, body: openaiError("You exceeded your current quota", "insufficient_quota", "insufficient_quota"), headers: { "x-should-retry": "false" } },
      { kind: "error", status: 403 },
      { kind: "error", status: 401 },
    );
    const e429 = await client.chat.completions.create(params).catch((e) => e);
    expect(e429).toBeInstanceOf(OpenAI.RateLimitError);
    expect([e429.type, e429.code]).toEqual(["insufficient_quota", "insufficient_quota"]);
    expect(e429.requestID).toStartWith("req_");
    const e403 = await client.chat.completions.create(params).catch((e) => e);
    expect(e403).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(e403.code).toBe("unsupported_country_region_territory");
    const e401 = await client.chat.completions.create(params).catch((e) => e);
    expect(e401).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(e401.code).toBe("invalid_api_key");
  });

  it("a mid-stream error chunk throws APIError with no status", async () => {
    up.script({ kind: "fail_mid_stream", afterEvents: 2, mode: "error_event" });
    const err = await chunks().catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBeUndefined();
    expect(err.type).toBe("server_error");
  });

  it("drop_before_headers surfaces as APIConnectionError", async () => {
    up.script({ kind: "drop_before_headers" });
    const err = await client.chat.completions.create(params).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIConnectionError);
  });

  it("a non-stream fail_mid_stream drop breaks the JSON body after the headers", async () => {
    up.script({ kind: "fail_mid_stream", afterEvents: 0, mode: "drop" });
    const err = await client.chat.completions.create(params).catch((e) => e);
    expect(err).toBeInstanceOf(Error);
    expect(up.requests[0]!.outcome).toBe("dropped");
  });
});

/** Decodes a PNG fully: chunk CRCs, then the inflated scanlines' length. */
function checkPng(bytes: Uint8Array): { width: number; height: number } {
  const size = readPngSize(bytes)!;
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 8;
  const idat: Uint8Array[] = [];
  while (at < bytes.length) {
    const len = v.getUint32(at);
    const type = new TextDecoder().decode(bytes.subarray(at + 4, at + 8));
    expect(crc32(bytes.subarray(at + 4, at + 8 + len))).toBe(v.getUint32(at + 8 + len));
    if (type === "IDAT") idat.push(bytes.subarray(at + 8, at + 8 + len));
    at += 12 + len;
  }
  expect(inflateSync(Buffer.concat(idat)).length).toBe((1 + size.width * 3) * size.height);
  return size;
}

describe("OpenAI Images", () => {
  it("generates n valid PNGs of the requested size with usage", async () => {
    const res = await client.images.generate({ model: "gpt-image-1", prompt: "a cat", size: "1536x1024", n: 2 });
    expect(res.data).toHaveLength(2);
    expect(checkPng(Buffer.from(res.data![0]!.b64_json!, "base64"))).toEqual({ width: 1536, height: 1024 });
    expect(res.size).toBe("1536x1024");
    expect(res.usage!.output_tokens).toBeGreaterThan(0);
    expect(up.hits["POST /v1/images/generations"]).toBe(1);
  });

  it("answers an unsupported size with a 400 naming the param", async () => {
    const err = await client.images.generate({ model: "gpt-image-1", prompt: "a cat", size: "big" as never }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.param).toBe("size");
  });

  it("accepts multipart edits with image[] files and records them", async () => {
    const png = encodePng(32, 16);
    const files = [await toFile(png, "a.png", { type: "image/png" }), await toFile(png, "b.png", { type: "image/png" })];
    const res = await client.images.edit({ model: "gpt-image-1", prompt: "make it blue", image: files });
    expect(checkPng(Buffer.from(res.data![0]!.b64_json!, "base64"))).toEqual({ width: 32, height: 16 });
    const body = up.requests[0]!.body as { prompt: string; "image[]": MockFile[] };
    expect(body.prompt).toBe("make it blue");
    expect(body["image[]"].map((f) => [f.filename, f.type])).toEqual([["a.png", "image/png"], ["b.png", "image/png"]]);
    expect(body["image[]"][0]!.bytes).toEqual(png);
  });

  it("accepts JSON edits and honours an images behaviour", async () => {
    up.script({ kind: "images", n: 3, size: "8x8", usage: false });
    const res = await fetch(`${up.openaiURL}/images/edits`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-image-1", prompt: "x", images: [{ image_url: "data:image/png;base64,AAAA" }] }),
    });
    const body = (await res.json()) as { data: { b64_json: string }[]; usage?: unknown };
    expect(body.data).toHaveLength(3);
    expect(readPngSize(Buffer.from(body.data[0]!.b64_json, "base64"))).toEqual({ width: 8, height: 8 });
    expect(body.usage).toBeUndefined();
  });

  it("applies error behaviours to image routes in the OpenAI dialect", async () => {
    up.script({ kind: "error", status: 500 });
    const err = await client.images.generate({ prompt: "x" }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect(err.type).toBe("server_error");
  });
});
