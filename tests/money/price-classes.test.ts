import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { startGatewayOnMock, type TestGateway } from "../support/gateway.ts";
import { sqlGet } from "../support/keyed.ts";
import type { MockUpstream, UsageOverride } from "../support/mock-upstream.ts";
import { pricedModel, usdToNanoShown } from "../support/prices.ts";

// Every price class on every path (docs/pricing.md): the upstream reports a class, the client is
// shown and charged it at its price, to the nano-dollar, and the balance moves by exactly that.

// The documented examples: claude-sonnet-4-5 (full table with its >200k tier), gpt-5 (service tiers),
// and two models whose unset classes follow the rules of their route's provider.
const SONNET = {
  pricing: { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75, cache_write_1h: 6, web_search: 10 },
  pricing_tiers: [{ above_input_tokens: 200000, input: 6, output: 22.5, cache_read: 0.6, cache_write: 7.5, cache_write_1h: 12 }],
};
const GPT5 = {
  pricing: { input: 1.25, output: 10, cache_read: 0.125 },
  service_tiers: { flex: { input: 0.625, output: 5, cache_read: 0.0625 }, priority: { input: 2.5, output: 20, cache_read: 0.25 } },
};
export const PRICE_MODELS = [
  pricedModel("sonnet", "anthropic", SONNET),
  pricedModel("sonnet-oai", "openai", SONNET),
  pricedModel("gpt5", "openai", GPT5),
  pricedModel("claude-bare", "anthropic", { pricing: { input: 3, output: 15 } }),
  pricedModel("oai-bare", "openai", { pricing: { input: 0.4, output: 1.6 } }),
];

let up: MockUpstream;
let gw: TestGateway;
let stop: () => Promise<void>;
beforeAll(async () => {
  ({ up, gw, stop } = await startGatewayOnMock({ openai: true, models: PRICE_MODELS, limits: { default_rpm: 100_000 } }));
});
afterAll(() => stop());

type Client = "messages" | "chat" | "responses";
interface Path {
  client: Client;
  stream: boolean;
}
const PATHS: Path[] = [
  { client: "messages", stream: false },
  { client: "messages", stream: true },
  { client: "chat", stream: false },
  { client: "chat", stream: true },
  { client: "responses", stream: false },
  { client: "responses", stream: true },
];
const pathName = (p: Path, model: string) => `${p.client} ${p.stream ? "stream" : "JSON"} on ${model}`;

/** One request through the official SDK of the client's dialect; the cost_usd it showed and its request id. */
async function call(key: string, p: Path, modelId: string): Promise<{ shown: number; requestId: string }> {
  const anthropic = new Anthropic({ baseURL: gw.url, apiKey: key, maxRetries: 0 });
  const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
  const messages = [{ role: "user" as const, content: "hi" }];
  const costOf = (u: unknown) => (u as { cost_usd: number }).cost_usd;
  let shown: number | undefined;
  let response: Response;
  if (p.client === "messages") {
    if (p.stream) {
      const r = await anthropic.messages.create({ model: modelId, max_tokens: 100, messages, stream: true }).withResponse();
      for await (const ev of r.data) if (ev.type === "message_delta") shown = costOf(ev.usage);
      response = r.response;
    } else {
      const r = await anthropic.messages.create({ model: modelId, max_tokens: 100, messages }).withResponse();
      shown = costOf(r.data.usage);
      response = r.response;
    }
  } else if (p.client === "chat") {
    if (p.stream) {
      const r = await openai.chat.completions.create({ model: modelId, max_tokens: 100, messages, stream: true, stream_options: { include_usage: true } }).withResponse();
      for await (const chunk of r.data) if (chunk.usage) shown = costOf(chunk.usage);
      response = r.response;
    } else {
      const r = await openai.chat.completions.create({ model: modelId, max_tokens: 100, messages }).withResponse();
      shown = costOf(r.data.usage);
      response = r.response;
    }
  } else if (p.stream) {
    const r = await openai.responses.create({ model: modelId, max_output_tokens: 100, input: "hi", stream: true }).withResponse();
    for await (const ev of r.data) if (ev.type === "response.completed") shown = costOf(ev.response.usage);
    response = r.response;
  } else {
    const r = await openai.responses.create({ model: modelId, max_output_tokens: 100, input: "hi" }).withResponse();
    shown = costOf(r.data.usage);
    response = r.response;
  }
  return { shown: usdToNanoShown(shown!), requestId: response.headers.get("x-gateway-request-id")! };
}

const chargeOf = (requestId: string) =>
  sqlGet<{ c: number | null }>(gw, "SELECT -sum(amount_nano) AS c FROM ledger_entries WHERE request_id = ?", requestId).c ?? 0;

/** Scripts the upstream's usage, sends the request, and checks the charge, what was shown, and the balance. */
async function expectCharged(p: Path, modelId: string, usage: UsageOverride, nano: number): Promise<string> {
  const a = await gw.account(100);
  const before = gw.money(a.accountId).balance;
  up.script({ kind: "text", text: "ok", usage });
  const { shown, requestId } = await call(a.key, p, modelId);
  for (let i = 0; i < 50 && gw.money(a.accountId).openHolds > 0; i++) await Bun.sleep(10);
  expect(chargeOf(requestId)).toBe(nano);
  expect(shown).toBe(nano);
  expect(gw.money(a.accountId).balance).toBe(before - nano);
  return requestId;
}

// Prices per token in nano-dollars: USD per 1M × 1,000. 100 k tokens written for an hour at 6 USD/M
// = 0.60 USD (the 5-minute rate billed 0.375); input 100 × 3,000 + output 10 × 15,000 = 450,000.
describe("1-hour cache writes are billed at cache_write_1h", () => {
  const usage = { input: 100, output: 10, cacheWrite: 0, cacheWrite1h: 100_000 };
  for (const p of PATHS) {
    it(pathName(p, "an Anthropic upstream"), () => expectCharged(p, "sonnet", usage, 600_450_000));
  }
  it("messages JSON on a Chat upstream reporting LiteLLM's split", () => expectCharged(PATHS[0]!, "sonnet-oai", usage, 600_450_000));
  it("messages stream on a Chat upstream reporting LiteLLM's split", () => expectCharged(PATHS[1]!, "sonnet-oai", usage, 600_450_000));
});

describe("server-side web searches are billed at web_search per 1,000", () => {
  // 5 searches × 10 USD / 1,000 = 0.05 USD, free before.
  const usage = { input: 100, output: 10, webSearches: 5 };
  for (const p of PATHS) {
    it(pathName(p, "an Anthropic upstream"), () => expectCharged(p, "sonnet", usage, 50_450_000));
  }
  it("messages JSON on a Chat upstream reporting server_tool_use", () => expectCharged(PATHS[0]!, "sonnet-oai", usage, 50_450_000));
});

describe("a prompt above a tier's threshold is billed wholly at the tier's prices", () => {
  // 500 k input × 6 + 100 output × 22.5 = 3.00225 USD; base prices billed 1.5015.
  const usage = { input: 500_000, output: 100 };
  for (const p of PATHS) {
    it(pathName(p, "an Anthropic upstream"), () => expectCharged(p, "sonnet", usage, 3_002_250_000));
    it(pathName(p, "a Chat upstream"), () => expectCharged(p, "sonnet-oai", usage, 3_002_250_000));
  }
  it("counts cache reads and writes in the prompt size", async () => {
    // 1,000 input + 150,000 read + 60,000 written = 211,000 > 200,000: every class at the tier's price.
    const u = { input: 1_000, output: 100, cacheRead: 150_000, cacheWrite: 60_000 };
    await expectCharged(PATHS[0]!, "sonnet", u, 1_000 * 6_000 + 100 * 22_500 + 150_000 * 600 + 60_000 * 7_500);
  });
  it("keeps base prices at the threshold itself", () =>
    expectCharged(PATHS[0]!, "sonnet", { input: 200_000, output: 100 }, 200_000 * 3_000 + 100 * 15_000));
});

describe("the service tier the answer reports prices it", () => {
  // 1,000 in + 1,000 out: priority 2.5/20 = 0.0225 USD, flex 0.625/5 = 0.005625, default 1.25/10 = 0.01125.
  for (const p of PATHS) {
    it(`priority: ${pathName(p, "a Chat upstream")}`, () => expectCharged(p, "gpt5", { input: 1_000, output: 1_000, serviceTier: "priority" }, 22_500_000));
    it(`flex: ${pathName(p, "a Chat upstream")}`, () => expectCharged(p, "gpt5", { input: 1_000, output: 1_000, serviceTier: "flex" }, 5_625_000));
  }
  it("default: base prices", () => expectCharged(PATHS[2]!, "gpt5", { input: 1_000, output: 1_000, serviceTier: "default" }, 11_250_000));
});

describe("reasoning reported outside completion_tokens is billed as output", () => {
  // 1,499 completion + 2,809 reasoning outside it: 4,308 output × 1.60 + 1,000 input × 0.40 = 0.0072928 USD (was 0.0027984).
  const usage = { input: 1_000, output: 4_308, reasoning: 2_809, reasoningOutside: true };
  for (const p of PATHS) {
    it(pathName(p, "a Chat upstream"), () => expectCharged(p, "oai-bare", usage, 7_292_800));
  }
});

describe("unset classes follow the route's provider rules", () => {
  it("on an Anthropic route: cache read 0.1x, cache write 1.25x, 1-hour write 2x input, searches 10 USD per 1,000", () =>
    // 1,000 × 3,000 + 100 × 15,000 + 10,000 × 300 + 10,000 × 3,750 + 10,000 × 6,000 + 2 × 10,000,000
    expectCharged(PATHS[0]!, "claude-bare", { input: 1_000, output: 100, cacheRead: 10_000, cacheWrite: 10_000, cacheWrite1h: 10_000, webSearches: 2 }, 125_000_000));
  it("elsewhere: an unset cache class at the input price", () =>
    // 1,000 × 400 + 100 × 1,600 + 10,000 × 400
    expectCharged(PATHS[2]!, "oai-bare", { input: 1_000, output: 100, cacheRead: 10_000 }, 4_560_000));
});
