import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { anthropicError, openaiError } from "../support/mock-upstream.ts";
import { startTextRig, type TextRig } from "../support/text-rig.ts";
import { errorOf } from "../support/errors.ts";
import { postWithApiKey } from "../support/keyed.ts";

let rig: TextRig;
beforeAll(async () => {
  rig = await startTextRig();
});
afterAll(() => rig.stop());

const post = (path: string, body: unknown, headers: Record<string, string> = {}) => postWithApiKey(rig.gw, path, body, rig.acct.key, headers);
const last = () => rig.up.requests.at(-1)!;

describe("the native Messages path", () => {
  it("forwards Claude Code's beta query, header and body fields unchanged, with only the model rewritten", async () => {
    const body = {
      model: "claude-alias",
      max_tokens: 2000,
      messages: [{ role: "user", content: "hi" }],
      system: [{ type: "text", text: "attribution block" }, { type: "text", text: "You are Claude Code", cache_control: { type: "ephemeral" } }],
      thinking: { type: "adaptive" },
      context_management: { edits: [{ type: "clear_tool_uses_20250919" }] },
      metadata: { user_id: "user_abc" },
      output_config: { effort: "high" },
      some_future_field: { a: [1, 2] },
    };
    const res = await post("/v1/messages?beta=true", body, { "anthropic-beta": "context-management-2025-06-27,fine-grained-tool-streaming-2025-05-14", "anthropic-version": "2023-06-01" });
    expect(res.status).toBe(200);
    const up = last();
    expect(up.path).toBe("/v1/messages?beta=true");
    expect(up.headers["anthropic-beta"]).toBe("context-management-2025-06-27,fine-grained-tool-streaming-2025-05-14");
    expect(up.headers["anthropic-version"]).toBe("2023-06-01");
    expect(up.body).toEqual({ ...body, model: "claude-upstream-1" });
  });

  it("sends the provider's key upstream and never the client's", async () => {
    await post("/v1/messages", { model: "claude-native", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }, { authorization: `Bearer ${rig.acct.key}` });
    const h = last().headers;
    expect(h["x-api-key"]).toBe("sk-ant-upstream");
    expect(h.authorization).toBeUndefined();
    expect(JSON.stringify(h)).not.toContain(rig.acct.key);
  });

  it("refuses a malformed anthropic-version header with 400", async () => {
    const res = await post("/v1/messages", { model: "claude-native", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }, { "anthropic-version": "yesterday" });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).code).toBe("invalid_request");
  });

  it("accepts the anthropic-version the current SDK sends", async () => {
    const msg = await rig.anthropic().messages.create({ model: "claude-native", max_tokens: 10, messages: [{ role: "user", content: "hi" }] });
    expect(msg.type).toBe("message");
  });
});

describe("the native Chat path", () => {
  it("asks the upstream for usage on every stream", async () => {
    const res = await post("/v1/chat/completions", { model: "gpt-native", max_tokens: 10, stream: true, messages: [{ role: "user", content: "hi" }] });
    await res.text();
    expect((last().body as { stream_options: unknown }).stream_options).toEqual({ include_usage: true });
  });

  it("serves max_completion_tokens without max_tokens and keeps unknown fields", async () => {
    const res = await post("/v1/chat/completions", { model: "gpt-native", max_completion_tokens: 10, reasoning_effort: "low", messages: [{ role: "user", content: "hi" }] });
    expect(res.status).toBe(200);
    expect(last().body).toMatchObject({ model: "gpt-upstream-1", max_completion_tokens: 10, reasoning_effort: "low" });
    expect(last().headers.authorization).toBe("Bearer sk-openai-upstream");
  });
});

describe("vendor errors", () => {
  it("passes Anthropic's authentication_error through with its text and no charge", async () => {
    const a = await rig.gw.account(1);
    rig.up.script({ kind: "error", status: 401, body: anthropicError("authentication_error", "invalid x-api-key") });
    const res = await post("/v1/messages", { model: "claude-native", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }, { "x-api-key": a.key });
    expect(res.status).toBe(401);
    expect(await errorOf(res)).toMatchObject({ type: "authentication_error", message: "invalid x-api-key" });
    expect(rig.gw.money(a.accountId).balance).toBe(1_000_000_000);
  });

  it("passes OpenAI's insufficient_quota through as a 429 the SDK will not retry", async () => {
    rig.up.script({ kind: "error", status: 429, body: openaiError("You exceeded your current quota", "insufficient_quota", "insufficient_quota") });
    const res = await post("/v1/chat/completions", { model: "gpt-native", max_tokens: 10, messages: [{ role: "user", content: "hi" }] });
    expect(res.status).toBe(429);
    expect(res.headers.get("x-should-retry")).toBe("false");
    expect(await errorOf(res)).toMatchObject({ type: "insufficient_quota", code: "insufficient_quota", message: "You exceeded your current quota" });
  });

  it("passes unsupported_country_region_territory through", async () => {
    rig.up.script({ kind: "error", status: 403, body: openaiError("Country, region, or territory not supported", "request_forbidden", "unsupported_country_region_territory") });
    const res = await post("/v1/chat/completions", { model: "gpt-native", max_tokens: 10, messages: [{ role: "user", content: "hi" }] });
    expect(res.status).toBe(403);
    expect(await errorOf(res)).toMatchObject({ type: "unsupported_country_region_territory", message: "Country, region, or territory not supported" });
  });

  it("answers a dropped upstream connection with 502 upstream_unavailable and a body", async () => {
    rig.up.script({ kind: "drop_before_headers" });
    const res = await post("/v1/chat/completions", { model: "gpt-native", max_tokens: 10, messages: [{ role: "user", content: "hi" }] });
    expect(res.status).toBe(502);
    expect((await errorOf(res)).code).toBe("upstream_unavailable");
    expect(res.headers.get("x-gateway-request-id")).toMatch(/^gw_/);
  });
});

describe("text only", () => {
  it("refuses an image block naming its position, without calling the upstream", async () => {
    const before = rig.up.requests.length;
    const res = await post("/v1/messages", {
      model: "claude-native",
      max_tokens: 10,
      messages: [
        { role: "user", content: "hi" },
        { role: "assistant", content: "hello" },
        { role: "user", content: [{ type: "text", text: "look" }, { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } }] },
      ],
    });
    expect(res.status).toBe(400);
    const e = await errorOf(res);
    expect(e.code).toBe("unsupported_content_type");
    expect(e.message).toContain("messages[2].content[1]");
    expect(rig.up.requests.length).toBe(before);
  });

  // OpenAI bills audio output tokens at audio rates inside completion_tokens (gpt-audio: 64 USD per 1M
  // against 10 for text); the gateway priced them as text. The translated route already refused them.
  for (const [name, extra, path] of [
    ["modalities asking for audio", { modalities: ["text", "audio"] }, "modalities[1]"],
    ["an audio output parameter", { audio: { voice: "alloy", format: "wav" } }, "audio"],
  ] as const) {
    it(`refuses ${name} on a native Chat route, without calling the upstream`, async () => {
      const before = rig.up.requests.length;
      const balance = rig.gw.money(rig.acct.accountId).balance;
      const res = await post("/v1/chat/completions", { model: "gpt-native", max_tokens: 10, messages: [{ role: "user", content: "hi" }], ...extra });
      expect(res.status).toBe(400);
      const e = await errorOf(res);
      expect(e.code).toBe("unsupported_content_type");
      expect(e.message).toStartWith(`${path}: `);
      expect(rig.up.requests.length).toBe(before);
      expect(rig.gw.money(rig.acct.accountId).balance).toBe(balance);
    });
  }
});

describe("translation refusals", () => {
  it("refuses n > 1 with a 400 naming the field", async () => {
    const res = await post("/v1/chat/completions", { model: "claude-native", max_tokens: 10, n: 2, messages: [{ role: "user", content: "hi" }] });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toContain("n");
  });
});
