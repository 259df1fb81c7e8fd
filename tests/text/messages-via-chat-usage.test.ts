// A Messages client served by a Chat Completions upstream reads, through @anthropic-ai/sdk, a usage
// object with every field of the SDK's `Usage` (docs/translation.md#usage-on-a-translated-answer):
// the counts, the cache split, the tier and speed the upstream names, null for what it does not
// say. Before, the JSON answer had only the four counts, and message_start lacked cache_creation,
// service_tier, speed, inference_geo, server_tool_use and output_tokens_details.
import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import { startGatewayOnMock, type TestGateway } from "../support/gateway.ts";
import type { MockUpstream, UsageOverride } from "../support/mock-upstream.ts";
import { textModel } from "../support/prices.ts";

let gw: TestGateway;
let up: MockUpstream;
let stop: () => Promise<void>;
let client: Anthropic;
beforeAll(async () => {
  ({ gw, up, stop } = await startGatewayOnMock({ openai: true, models: [textModel("gpt", "openai"), textModel("claude", "anthropic")], limits: { default_rpm: 10_000 } }));
  client = new Anthropic({ baseURL: gw.url, apiKey: (await gw.account(100)).key, maxRetries: 0 });
});
afterAll(() => stop());

/** The keys of the SDK's Usage (@anthropic-ai/sdk 1.12, resources/messages/messages.d.ts), all required there. */
const SDK_USAGE_KEYS = ["cache_creation", "cache_creation_input_tokens", "cache_read_input_tokens", "inference_geo", "input_tokens", "output_tokens", "output_tokens_details", "server_tool_use", "service_tier", "speed"];

const ask = (model: string) => ({ model, max_tokens: 100, messages: [{ role: "user" as const, content: "hi" }] });
// 100 uncached, 50 read, 30 + 10 written (5 minutes, 1 hour), 20 out of which 5 reasoning, at OpenAI's priority tier.
const USAGE: UsageOverride = { input: 100, output: 20, cacheRead: 50, cacheWrite: 30, cacheWrite1h: 10, reasoning: 5, serviceTier: "priority" };
const known = {
  input_tokens: 100,
  output_tokens: 20,
  cache_creation_input_tokens: 40,
  cache_read_input_tokens: 50,
  cache_creation: { ephemeral_5m_input_tokens: 30, ephemeral_1h_input_tokens: 10 },
  server_tool_use: null,
  output_tokens_details: { thinking_tokens: 5 },
  inference_geo: null,
  service_tier: "priority",
  speed: "standard",
};

const keys = (o: object) => Object.keys(o).filter((k) => k !== "cost_usd").sort();

describe("a translated Messages answer's usage, read through @anthropic-ai/sdk", () => {
  it("has every field of the SDK's Usage, with the upstream's counts, split and tier, null for the region", async () => {
    up.script({ kind: "text", text: "ok", usage: USAGE });
    const msg = await client.messages.create(ask("gpt"));
    expect(keys(msg.usage)).toEqual(SDK_USAGE_KEYS);
    expect(msg.usage).toMatchObject(known as never);
  });

  it("has every usage field a native answer carries", async () => {
    up.script({ kind: "text", text: "ok", usage: { input: 10, output: 2 } });
    const native = await client.messages.create(ask("claude"));
    up.script({ kind: "text", text: "ok", usage: { input: 10, output: 2 } });
    const translated = await client.messages.create(ask("gpt"));
    expect(keys(translated.usage)).toEqual(expect.arrayContaining(keys(native.usage)));
    // The Chat upstream names its tier "default": Anthropic's standard tier and speed; no reasoning reported as 0.
    expect(translated.usage).toMatchObject({ service_tier: "standard", speed: "standard", output_tokens_details: { thinking_tokens: 0 } } as never);
  });

  it("says null for the tier and speed of an upstream that names no tier", async () => {
    up.script({ kind: "raw", body: { id: "chatcmpl-x", object: "chat.completion", created: 1, model: "m", choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: { prompt_tokens: 7, completion_tokens: 1, total_tokens: 8 } } });
    const msg = await client.messages.create(ask("gpt"));
    expect(keys(msg.usage)).toEqual(SDK_USAGE_KEYS);
    expect(msg.usage).toMatchObject({ service_tier: null, speed: null, output_tokens_details: null, cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 } } as never);
  });
});

describe("a translated Messages stream's usage, read through @anthropic-ai/sdk", () => {
  it("starts with every field of the SDK's Usage: the tier the first chunk names, the cache split null until known", async () => {
    up.script({ kind: "text", text: "ok", usage: USAGE });
    const stream = client.messages.stream(ask("gpt"));
    const started: Anthropic.Messages.Usage[] = [];
    stream.on("streamEvent", (e) => {
      if (e.type === "message_start") started.push(structuredClone(e.message.usage));
    });
    const final = await stream.finalMessage();
    expect(keys(started[0]!)).toEqual(SDK_USAGE_KEYS);
    expect(started[0]).toMatchObject({ output_tokens: 0, cache_creation: null, server_tool_use: null, output_tokens_details: null, inference_geo: null, service_tier: "priority", speed: "standard" });
    // message_delta's counts complete the SDK's final message; the split stays message_start's.
    expect(keys(final.usage)).toEqual(SDK_USAGE_KEYS);
    expect(final.usage).toMatchObject({ ...known, cache_creation: null } as never);
  });
});
