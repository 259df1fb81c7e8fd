import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { startGatewayOnMock, type TestGateway } from "../support/gateway.ts";
import { postWithApiKey, sqlGet } from "../support/keyed.ts";
import { expectError } from "../support/errors.ts";
import type { MockUpstream, UsageOverride } from "../support/mock-upstream.ts";
import { pricedModel, usdToNanoShown } from "../support/prices.ts";
import { modelPrices } from "../../src/catalog/prices.ts";
import { costLines } from "../../src/cli/prices.ts";
import type { ModelConfig } from "../../src/config/schema.ts";

// What a provider bills beyond the plain token counts, priced as it bills it.
// Fast mode (docs/pricing.md#service-tiers): Anthropic bills `speed: "fast"` at a premium on every
// class (Opus 4.6: 6x, 30 / 150 USD per 1M) and reports it in usage.speed; OpenRouter reports it as
// service_tier "fast". Before, both were billed at the base prices: a sixth of the provider's bill.

const OPUS = {
  pricing: { input: 5, output: 25, cache_read: 0.5, cache_write: 6.25 },
  service_tiers: { fast: { input: 30, output: 150, cache_read: 3, cache_write: 37.5 } },
};
// Claude Opus 4.6 above 200k input tokens (2x input, 1.5x output and the cache classes that follow
// input), and GPT-5.4 above 272k (2x input and cached input, 1.5x output) with its flex tier.
const OPUS_LONG = { ...OPUS, pricing_tiers: [{ above_input_tokens: 200_000, input: 10, output: 37.5, cache_read: 1, cache_write: 12.5 }] };
const GPT54 = {
  pricing: { input: 2.5, output: 15, cache_read: 0.25 },
  pricing_tiers: [{ above_input_tokens: 272_000, input: 5, output: 22.5, cache_read: 0.5 }],
  service_tiers: { flex: { input: 1.25, output: 7.5, cache_read: 0.125 } },
};
const MODELS = [
  pricedModel("opus", "anthropic", OPUS),
  pricedModel("opus-held", "anthropic", OPUS),
  pricedModel("opus-router", "openai", OPUS),
  pricedModel("opus-nofast", "anthropic", { pricing: OPUS.pricing }),
  pricedModel("search", "openai", { pricing: { input: 2.5, output: 10, web_search: 25 } }),
  pricedModel("opus-geo-held", "anthropic", OPUS),
  pricedModel("deepseek", "openai", { pricing: { input: 0.28, output: 0.42, cache_read: 0.028 } }),
  pricedModel("opus-long", "anthropic", OPUS_LONG),
  pricedModel("gpt54", "openai", GPT54),
];

let up: MockUpstream;
let gw: TestGateway;
let stop: () => Promise<void>;
beforeAll(async () => {
  ({ up, gw, stop } = await startGatewayOnMock({ openai: true, models: MODELS, limits: { default_rpm: 100_000 } }));
});
afterAll(() => stop());

const logOf = (requestId: string) =>
  sqlGet<{ cost_nano: number; service_tier: string | null }>(gw, "SELECT cost_nano, service_tier FROM request_logs WHERE request_id = ?", requestId);
const geoOf = (requestId: string) => sqlGet<{ inference_geo: string | null }>(gw, "SELECT inference_geo FROM request_logs WHERE request_id = ?", requestId).inference_geo;

/** The cost_usd of a JSON answer or of a stream's last usage (message_delta, the Chat usage chunk). */
async function shownCost(res: Response, stream: boolean): Promise<number> {
  if (!stream) return usdToNanoShown(((await res.json()) as { usage: { cost_usd: number } }).usage.cost_usd);
  let shown: number | undefined;
  for (const line of (await res.text()).split("\n")) {
    if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
    const cost = (JSON.parse(line.slice(6)) as { usage?: { cost_usd?: number } }).usage?.cost_usd;
    if (cost !== undefined) shown = cost;
  }
  return usdToNanoShown(shown!);
}

/** One request whose upstream reports `usage`: the charge, the cost shown, the log row and the balance agree on `nano`. */
async function expectCharged(path: string, body: object, stream: boolean, usage: UsageOverride, nano: number, tier: string | null): Promise<string> {
  const a = await gw.account(100);
  const before = gw.money(a.accountId).balance;
  up.script({ kind: "text", text: "ok", usage });
  const res = await postWithApiKey(gw, path, { ...body, stream }, a.key);
  expect(res.status).toBe(200);
  const requestId = res.headers.get("x-gateway-request-id")!;
  expect(await shownCost(res, stream)).toBe(nano);
  for (let i = 0; i < 50 && gw.money(a.accountId).openHolds > 0; i++) await Bun.sleep(10);
  expect(gw.money(a.accountId).balance).toBe(before - nano);
  expect(logOf(requestId)).toEqual({ cost_nano: nano, service_tier: tier });
  return requestId;
}

const messages = (id: string, extra: object = {}) => ({ model: id, max_tokens: 100, messages: [{ role: "user", content: "hi" }], ...extra });
const chat = (id: string, extra: object = {}) => ({ ...messages(id), stream_options: { include_usage: true }, ...extra });

// 1,000 in × 30 + 1,000 out × 150 + 10,000 read × 3 = 0.21 USD; at base prices 0.035.
const FAST_USAGE = { input: 1_000, output: 1_000, cacheRead: 10_000, speed: "fast" as const };
const FAST_NANO = 1_000 * 30_000 + 1_000 * 150_000 + 10_000 * 3_000;

describe("an answer that ran in fast mode is billed at service_tiers.fast", () => {
  for (const stream of [false, true]) {
    it(`usage.speed "fast" on a Messages ${stream ? "stream" : "JSON answer"}`, () =>
      expectCharged("/v1/messages", messages("opus", { speed: "fast" }), stream, FAST_USAGE, FAST_NANO, "fast"));
    it(`usage.speed "fast" on a Chat client's ${stream ? "stream" : "JSON answer"} from a Messages upstream`, () =>
      expectCharged("/v1/chat/completions", chat("opus"), stream, FAST_USAGE, FAST_NANO, "fast"));
    it(`service_tier "fast" on a Chat ${stream ? "stream" : "JSON answer"}`, () =>
      expectCharged("/v1/chat/completions", chat("opus-router", { service_tier: "fast" }), stream, { ...FAST_USAGE, speed: undefined, serviceTier: "fast" }, FAST_NANO, "fast"));
  }
  it("usage.speed \"standard\" keeps the base prices", () =>
    expectCharged("/v1/messages", messages("opus"), false, { ...FAST_USAGE, speed: "standard" }, 1_000 * 5_000 + 1_000 * 25_000 + 10_000 * 500, null));
});

describe("fast mode on a model without fast prices is refused before any upstream call", () => {
  for (const [path, body] of [
    ["/v1/messages", messages("opus-nofast", { speed: "fast" })],
    ["/v1/chat/completions", chat("opus-nofast", { service_tier: "fast" })],
  ] as const) {
    it(path, async () => {
      const a = await gw.account(10);
      const before = gw.money(a.accountId).balance;
      const sent = up.requests.length;
      const err = await expectError(await postWithApiKey(gw, path, body, a.key), 400, "invalid_request");
      expect(err.message).toContain("fast mode is not sold");
      expect(up.requests.length).toBe(sent);
      expect(gw.money(a.accountId).balance).toBe(before);
    });
  }
});

describe("a request asking for fast mode is held at the fast prices", () => {
  // 10,000 output tokens: 0.25 USD at base, 1.50 USD at the fast price.
  const body = (extra: object = {}) => ({ ...messages("opus-held", extra), max_tokens: 10_000 });
  it("refused 402 on 1.00 USD", async () => {
    const a = await gw.account(1);
    const before = gw.money(a.accountId).balance;
    await expectError(await postWithApiKey(gw, "/v1/messages", body({ speed: "fast" }), a.key), 402, "insufficient_balance");
    expect(gw.money(a.accountId).balance).toBe(before);
  });
  it("the same body without speed passes on 1.00 USD", async () => {
    const a = await gw.account(1);
    up.script({ kind: "text", text: "ok", usage: { input: 10, output: 1 } });
    const res = await postWithApiKey(gw, "/v1/messages", body(), a.key);
    expect(res.status).toBe(200);
    await res.text();
  });
});

describe("a Chat search model's completion is billed one search when its usage reports none", () => {
  // OpenAI bills each gpt-4o-search-preview completion one call (25 USD per 1,000) and reports it
  // nowhere in the usage: 100 × 2,500 + 10 × 10,000 + 25,000,000 = 0.02535 USD (0.00035 before).
  const usage = { input: 100, output: 10 };
  const body = chat("search", { web_search_options: {} });
  for (const stream of [false, true]) {
    it(stream ? "stream" : "JSON answer", async () => {
      const a = await gw.account(10);
      const before = gw.money(a.accountId).balance;
      up.script({ kind: "text", text: "ok", usage });
      const res = await postWithApiKey(gw, "/v1/chat/completions", { ...body, stream }, a.key);
      const requestId = res.headers.get("x-gateway-request-id")!;
      expect(await shownCost(res, stream)).toBe(25_350_000);
      for (let i = 0; i < 50 && gw.money(a.accountId).openHolds > 0; i++) await Bun.sleep(10);
      expect(gw.money(a.accountId).balance).toBe(before - 25_350_000);
      expect(sqlGet(gw, "SELECT cost_nano, web_searches FROM request_logs WHERE request_id = ?", requestId)).toEqual({ cost_nano: 25_350_000, web_searches: 1 });
    });
  }
  it("searches the upstream reports are billed as reported, not one more", () =>
    expectCharged("/v1/chat/completions", body, false, { ...usage, webSearches: 3 }, 100 * 2_500 + 10 * 10_000 + 3 * 25_000_000, "default"));
  it("a body without web_search_options is billed no search", () =>
    expectCharged("/v1/chat/completions", chat("search"), false, usage, 100 * 2_500 + 10 * 10_000, "default"));
});

describe("inference pinned to the US (usage.inference_geo \"us\") is billed at 1.1x every token price", () => {
  // 1,000 in × 5.5 + 1,000 out × 27.5 + 10,000 read × 0.55 = 0.0385 USD; global (before): 0.035.
  const usage = { input: 1_000, output: 1_000, cacheRead: 10_000, inferenceGeo: "us" };
  const US_NANO = 1_000 * 5_500 + 1_000 * 27_500 + 10_000 * 550;
  for (const stream of [false, true]) {
    it(`on a Messages ${stream ? "stream" : "JSON answer"}, the region logged`, async () => {
      const id = await expectCharged("/v1/messages", messages("opus", { inference_geo: "us" }), stream, usage, US_NANO, null);
      expect(geoOf(id)).toBe("us");
    });
    it(`on a Chat client's ${stream ? "stream" : "JSON answer"} from a Messages upstream`, () =>
      expectCharged("/v1/chat/completions", chat("opus"), stream, usage, US_NANO, null));
  }
  it("stacks on fast mode: 1.1x the fast prices", () =>
    expectCharged("/v1/messages", messages("opus", { speed: "fast" }), false, { ...usage, speed: "fast" }, Math.round(FAST_NANO * 1.1), "fast"));
  it("\"global\" keeps the base prices and logs no region", async () => {
    const id = await expectCharged("/v1/messages", messages("opus"), false, { ...usage, inferenceGeo: "global" }, 35_000_000, null);
    expect(geoOf(id)).toBeNull();
  });
  it("a request asking for it is held at 1.1x: refused 402 on a balance the global hold fits", async () => {
    // 10,000 output tokens: 0.25 USD held globally, 0.275 in the US; 0.26 USD covers only the first.
    const body = (extra: object = {}) => ({ ...messages("opus-geo-held", extra), max_tokens: 10_000 });
    const a = await gw.account(0.26);
    await expectError(await postWithApiKey(gw, "/v1/messages", body({ inference_geo: "us" }), a.key), 402, "insufficient_balance");
    up.script({ kind: "text", text: "ok", usage: { input: 10, output: 1 } });
    const res = await postWithApiKey(gw, "/v1/messages", body(), a.key);
    expect(res.status).toBe(200);
    await res.text();
  });
  it("gateway logs show rebuilds the charge at the regional prices", () => {
    const prices = modelPrices(MODELS[0] as unknown as ModelConfig, "anthropic");
    const lines = costLines(prices, { input: 1_000, output: 1_000, cacheRead: 10_000, cacheWrite: 0, inferenceGeo: "us" });
    expect(lines.totalNano).toBe(US_NANO);
    expect(lines.table).toContain("inference_geo us");
  });
});

describe("DeepSeek's cache hits (prompt_cache_hit_tokens) are billed at cache_read", () => {
  // 1,000 missed × 0.28 + 9,000 hit × 0.028 + 100 out × 0.42 = 0.000574 USD; every prompt token at
  // the input price (before): 0.002842, five times DeepSeek's bill.
  const usage = { input: 1_000, cacheRead: 9_000, output: 100, deepseek: true };
  const NANO = 1_000 * 280 + 9_000 * 28 + 100 * 420;
  for (const stream of [false, true]) {
    it(`Chat ${stream ? "stream" : "JSON answer"}`, () => expectCharged("/v1/chat/completions", chat("deepseek"), stream, usage, NANO, "default"));
    it(`Messages client's ${stream ? "stream" : "JSON answer"}`, () => expectCharged("/v1/messages", messages("deepseek"), stream, usage, NANO, "default"));
  }
});

describe("a long prompt on a service tier is billed at the service tier's prices times the long-context multiple", () => {
  // docs/pricing.md#service-and-long-context-tiers. Before, the long-context tier's own prices replaced
  // the service tier's: fast mode above 200k was sold at 10 / 37.5 USD (a sixth of Anthropic's
  // 60 / 225), flex above 272k at 5 / 22.5 (twice OpenAI's 2.5 / 11.25).
  it("fast mode above 200k input tokens on Messages: 6x the long-context prices", () =>
    // 250,000 × 60 + 1,000 × 225 = 15.225 USD (2.5375 before).
    expectCharged("/v1/messages", messages("opus-long", { speed: "fast" }), false, { input: 250_000, output: 1_000, speed: "fast" }, 250_000 * 60_000 + 1_000 * 225_000, "fast"));
  it("flex above 272k input tokens on Chat: 2x input and 1.5x output of flex", () =>
    // 300,000 × 2.5 + 1,000 × 11.25 = 0.76125 USD (1.5225 before).
    expectCharged("/v1/chat/completions", chat("gpt54", { service_tier: "flex" }), false, { input: 300_000, output: 1_000, serviceTier: "flex" }, 300_000 * 2_500 + 1_000 * 11_250, "flex"));
  it("the default tier above 272k keeps the long-context tier's prices", () =>
    expectCharged("/v1/chat/completions", chat("gpt54"), false, { input: 300_000, output: 1_000 }, 300_000 * 5_000 + 1_000 * 22_500, "default"));
  it("fast mode under the threshold keeps the fast prices", () =>
    expectCharged("/v1/messages", messages("opus-long", { speed: "fast" }), false, { input: 1_000, output: 1_000, speed: "fast" }, 1_000 * 30_000 + 1_000 * 150_000, "fast"));
  it("stacks every class, cache reads and writes too, and gateway logs show names the stacked table", () => {
    const prices = modelPrices(MODELS.find((m) => m.id === "opus-long") as unknown as ModelConfig, "anthropic");
    const [long] = prices.service.fast!.tiers;
    // fast × (long ÷ base): input 30 × 2, output 150 × 1.5, cache_read 3 × 2, cache_write 37.5 × 2.
    expect([long!.prices.input, long!.prices.output, long!.prices.cacheRead, long!.prices.cacheWrite]).toEqual([60e9, 225e9, 6e9, 75e9]);
    expect(long!.sources.output).toEqual({ source: "derived", rule: "fast x the above-200000 tier's multiple of base" });
    const lines = costLines(prices, { input: 150_000, output: 1_000, cacheRead: 100_000, cacheWrite: 0, serviceTier: "fast" });
    expect(lines.totalNano).toBe(150_000 * 60_000 + 1_000 * 225_000 + 100_000 * 6_000);
  });
  it("holds a fast request with a long prompt at the stacked prices", async () => {
    // About 230,000 input tokens estimated: 13.8 USD at 60 per 1M, 2.3 at the long tier's 10.
    const a = await gw.account(5);
    const before = gw.money(a.accountId).balance;
    const long = { model: "opus-long", max_tokens: 16, speed: "fast", messages: [{ role: "user", content: "word ".repeat(230_000) }] };
    await expectError(await postWithApiKey(gw, "/v1/messages", long, a.key), 402, "insufficient_balance");
    expect(gw.money(a.accountId).balance).toBe(before);
  });
});
