// OpenAI-compatible servers that differ from OpenAI: no usage in the answer, or another name for the
// output cap (provider `max_tokens_field`). And one x-gateway-dropped list when both sides dropped.
import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { startGatewayOnMock, type TestGateway } from "../support/gateway.ts";
import type { MockUpstream } from "../support/mock-upstream.ts";
import { textModel as model } from "../support/prices.ts";
import type { JsonObject } from "../../src/wire/shapes.ts";

let gw: TestGateway;
let up: MockUpstream;
let stop: () => Promise<void>;
let key: string;
beforeAll(async () => {
  ({ gw, up, stop } = await startGatewayOnMock({
    providers: (up) => [
      { id: "plain", kind: "openai", base_url: up.openaiURL, api_key: "sk-plain" },
      { id: "old-compat", kind: "openai", base_url: up.openaiURL, api_key: "sk-old", max_tokens_field: "max_tokens" },
      { id: "anthropic", kind: "anthropic", base_url: up.url, api_key: "sk-ant" },
    ],
    models: [model("plain-gpt", "plain"), model("old-gpt", "old-compat"), model("claude", "anthropic")],
    limits: { default_rpm: 10_000 },
  }));
  key = (await gw.account(100)).key;
});
afterAll(() => stop());

const openai = () => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
const lastBody = () => up.requests.at(-1)!.body as JsonObject;

/** A chat completion as some compatible servers send it: no usage object at all. */
const noUsageCompletion = {
  id: "chatcmpl-x",
  object: "chat.completion",
  created: 1,
  model: "m",
  choices: [{ index: 0, message: { role: "assistant", content: "Hello there, friend!" }, finish_reason: "stop" }],
};

describe("an upstream that reports no usage", () => {
  it("shows chat clients the prompt and completion tokens they were billed on, with cost_usd", async () => {
    up.script({ kind: "raw", body: noUsageCompletion });
    const res = await openai().chat.completions.create({ model: "plain-gpt", max_tokens: 50, messages: [{ role: "user", content: "hi" }] });
    const usage = res.usage as unknown as Record<string, number>;
    expect(usage.prompt_tokens).toBeGreaterThan(0);
    expect(usage.completion_tokens).toBeGreaterThan(0);
    expect(usage.total_tokens).toBe(usage.prompt_tokens! + usage.completion_tokens!);
    const cost = (usage.prompt_tokens! * 3 + usage.completion_tokens! * 15) / 1e6;
    expect(usage.cost_usd).toBeCloseTo(cost, 9);
  });

  it("shows Messages clients input_tokens and output_tokens on a translated route", async () => {
    up.script({ kind: "raw", body: noUsageCompletion });
    const client = new Anthropic({ baseURL: gw.url, apiKey: key, maxRetries: 0 });
    const res = await client.messages.create({ model: "plain-gpt", max_tokens: 50, messages: [{ role: "user", content: "hi" }] });
    expect(res.usage.input_tokens).toBeGreaterThan(0);
    expect(res.usage.output_tokens).toBeGreaterThan(0);
    expect((res.usage as unknown as { cost_usd: number }).cost_usd).toBeGreaterThan(0);
  });

  it("gives a Responses answer a usage block with total_tokens and cost_usd instead of null", async () => {
    up.script({ kind: "raw", body: noUsageCompletion });
    const res = await openai().responses.create({ model: "plain-gpt", input: "hi", max_output_tokens: 50 });
    expect(res.usage).not.toBeNull();
    expect(res.usage!.total_tokens).toBe(res.usage!.input_tokens + res.usage!.output_tokens);
    expect((res.usage as unknown as { cost_usd: number }).cost_usd).toBeGreaterThan(0);
  });
});

describe("a provider's max_tokens_field", () => {
  it("sends a chat client's max_completion_tokens as max_tokens when the provider says so", async () => {
    await openai().chat.completions.create({ model: "old-gpt", max_completion_tokens: 77, messages: [{ role: "user", content: "hi" }] });
    expect(lastBody().max_tokens).toBe(77);
    expect(lastBody()).not.toHaveProperty("max_completion_tokens");
  });

  it("sends a Responses request's max_output_tokens as max_tokens when the provider says so", async () => {
    await openai().responses.create({ model: "old-gpt", input: "hi", max_output_tokens: 66 });
    expect(lastBody().max_tokens).toBe(66);
    expect(lastBody()).not.toHaveProperty("max_completion_tokens");
  });

  it("forwards the client's own field unchanged when the provider names none", async () => {
    await openai().chat.completions.create({ model: "plain-gpt", max_completion_tokens: 55, messages: [{ role: "user", content: "hi" }] });
    expect(lastBody().max_completion_tokens).toBe(55);
    expect(lastBody()).not.toHaveProperty("max_tokens");
  });
});

describe("x-gateway-dropped", () => {
  it("lists the fields the Responses adapter dropped and the ones the route's translation dropped", async () => {
    const res = await fetch(`${gw.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "claude", input: "hi", max_output_tokens: 20, service_tier: "flex", temperature: 1.5 }),
    });
    expect(res.status).toBe(200);
    const dropped = res.headers.get("x-gateway-dropped")!.split(", ");
    expect(dropped).toContain("service_tier");
    expect(dropped).toContain("temperature");
  });
});
