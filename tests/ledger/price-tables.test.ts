import { describe, expect, it } from "bun:test";
import { ConfigError, parseConfig } from "../../src/config/load.ts";
import { buildCatalog } from "../../src/catalog/catalog.ts";
import { priceUsage } from "../../src/catalog/prices.ts";
import { tokenCost } from "../../src/core/money.ts";

// The price schema (docs/pricing.md): bad values refused with the path of the field, and the
// effective table of each route's provider kind.

const providers = [
  { id: "ant", kind: "anthropic", base_url: "http://127.0.0.1:1" },
  { id: "oai", kind: "openai", base_url: "http://127.0.0.1:1" },
];
const textModel = (over: Record<string, unknown> = {}) => ({
  id: "m1",
  modalities: ["text"],
  endpoints: ["messages", "chat.completions"],
  pricing: { input: 3, output: 15 },
  routes: [{ provider: "ant", model: "up" }],
  ...over,
});

function refusal(models: unknown[]): string {
  try {
    parseConfig({ providers, models }, "gateway.toml", {});
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error("the config was accepted");
}

describe("price config refused with the path of the bad field", () => {
  it("a negative cache_write_1h", () => {
    expect(refusal([textModel({ pricing: { input: 3, output: 15, cache_write_1h: -1 } })])).toStartWith("gateway.toml: models[0].pricing.cache_write_1h: ");
  });
  it("a web_search price that is not a number", () => {
    expect(refusal([textModel({ pricing: { input: 3, output: 15, web_search: "ten" } })])).toStartWith("gateway.toml: models[0].pricing.web_search: ");
  });
  it("a price with more than 9 decimals", () => {
    expect(refusal([textModel({ pricing: { input: 3, output: 15, cache_read: 0.0000000001 } })])).toStartWith("gateway.toml: models[0].pricing.cache_read: not a USD price");
  });
  it("a tier without its threshold", () => {
    expect(refusal([textModel({ pricing_tiers: [{ input: 6 }] })])).toStartWith("gateway.toml: models[0].pricing_tiers[0].above_input_tokens: required field is missing");
  });
  it("a tier with a class tiers do not have", () => {
    expect(refusal([textModel({ pricing_tiers: [{ above_input_tokens: 1, web_search: 5 }] })])).toStartWith("gateway.toml: models[0].pricing_tiers[0].web_search: unknown field");
  });
  it("two tiers on one threshold", () => {
    const tiers = [{ above_input_tokens: 200000, input: 6 }, { above_input_tokens: 200000, input: 7 }];
    expect(refusal([textModel({ pricing_tiers: tiers })])).toBe("gateway.toml: models[0].pricing_tiers[1].above_input_tokens: another tier already starts above 200000");
  });
  it("a service tier other than flex, priority and fast", () => {
    expect(refusal([textModel({ service_tiers: { scale: { input: 1 } } })])).toStartWith("gateway.toml: models[0].service_tiers.scale: unknown field");
  });
  it("a bad price in a service tier", () => {
    expect(refusal([textModel({ service_tiers: { priority: { output: -2 } } })])).toStartWith("gateway.toml: models[0].service_tiers.priority.output: ");
  });
  it("a fast-mode price that is not a USD price", () => {
    expect(refusal([textModel({ service_tiers: { fast: { input: 30, output: "150" } } })])).toStartWith("gateway.toml: models[0].service_tiers.fast.output: ");
    expect(refusal([textModel({ service_tiers: { fast: { input: 30.0000000001 } } })])).toStartWith("gateway.toml: models[0].service_tiers.fast.input: not a USD price");
  });
  it("accepts the image price classes on an image model", () => {
    const image = { id: "img", modalities: ["image"], endpoints: ["images.generations"], pricing: { input: 5, image_input: 10, image_output: 40, per_image: 0.167 }, routes: [{ provider: "oai", model: "gpt-image-1" }] };
    expect(parseConfig({ providers, models: [image] }, "t", {}).models[0]!.pricing.image_output).toBe(40);
  });
  it("an image model priced by image tokens without image_input (its edit sources would be free)", () => {
    const image = { id: "img", modalities: ["image"], endpoints: ["images.edits"], pricing: { input: 5, image_output: 40, per_image: 0.167 }, routes: [{ provider: "oai", model: "gpt-image-1" }] };
    expect(refusal([image])).toStartWith("gateway.toml: models[0].pricing.image_input: required for image models priced by image tokens");
  });
  it("image prices on a text model, where nothing would bill them", () => {
    expect(refusal([textModel({ pricing: { input: 3, output: 15, image_output: 40 } })])).toBe("gateway.toml: models[0].pricing.image_output: applies to image models only");
  });
});

describe("inference pinned to a region (docs/pricing.md#regional-inference)", () => {
  const routes = [{ provider: "ant", model: "a" }, { provider: "oai", model: "b" }];
  const catalog = () => buildCatalog(parseConfig({ providers, models: [textModel({ pricing: { input: 0.000000003, output: 15, web_search: 10 }, routes })] }, "t", {}));
  it("raises each token price by 1.1x, rounded up to the nano-dollar per 1M, and leaves searches alone", () => {
    // input 3 nano per 1M × 1.1 = 3.3, billed 4; output 15 USD × 1.1 = 16.5; the search stays 10,000,000 nano.
    const u = { input: 1_000_000, output: 1_000_000, cacheRead: 0, cacheWrite: 0, webSearches: 1, inferenceGeo: "us" };
    expect(priceUsage(catalog().models[0]!.routes[0]!.prices, u)).toBe(4 + 16_500_000_000 + 10_000_000);
  });
  it("applies on Anthropic routes only", () => {
    const u = { input: 0, output: 1_000_000, cacheRead: 0, cacheWrite: 0, inferenceGeo: "us" };
    expect(priceUsage(catalog().models[0]!.routes[1]!.prices, u)).toBe(15_000_000_000);
  });
});

describe("effective prices per provider kind", () => {
  const catalog = () =>
    buildCatalog(parseConfig({ providers, models: [textModel({ routes: [{ provider: "ant", model: "a" }, { provider: "oai", model: "b" }] })] }, "t", {}));
  const u = { input: 0, output: 0, cacheRead: 1_000_000, cacheWrite: 1_000_000, cacheWrite1h: 1_000_000, webSearches: 1000 };
  it("an Anthropic route derives the cache classes and web search from its published rules", () => {
    // 0.30 + 3.75 + 6.00 + 10.00 USD
    expect(priceUsage(catalog().models[0]!.routes[0]!.prices, u)).toBe(20_050_000_000);
  });
  it("another route bills unset cache classes at the input price", () => {
    // 3 + 3 + 3 + 10 USD (searches are never free)
    expect(priceUsage(catalog().models[0]!.routes[1]!.prices, u)).toBe(19_000_000_000);
  });
  it("keeps one table per provider kind", () => {
    expect(catalog().models[0]!.priceTables.map((p) => p.kind)).toEqual(["anthropic", "openai"]);
  });
  it("a tier's unset class keeps a configured base price and follows the tier's input when derived", () => {
    const cfg = parseConfig({ providers, models: [textModel({ pricing: { input: 3, output: 15, cache_read: 0.5 }, pricing_tiers: [{ above_input_tokens: 10, input: 6 }] })] }, "t", {});
    const p = buildCatalog(cfg).models[0]!.routes[0]!.prices;
    const tier = p.standard.tiers[0]!;
    expect(tier.prices.cacheRead).toBe(500_000_000);
    expect(tier.sources.cacheRead).toEqual({ source: "base" });
    expect(tier.prices.cacheWrite).toBe(7_500_000_000); // 1.25 × the tier's 6
    expect(tier.prices.output).toBe(15_000_000_000);
  });
});

describe("tokenCost with searches", () => {
  it("prices a search per thousand, one rounding over every class", () => {
    // 1 search at 0.001 USD per 1,000 = 1,000 nano; 1 input token at 500 nano per 1M = 0.0005 nano: 1,000.0005, rounded up once.
    expect(tokenCost({ input: 500, output: 0, cacheRead: 0, cacheWrite: 0, webSearch: 1_000_000 }, { input: 1, output: 0, cacheRead: 0, cacheWrite: 0, webSearches: 1 })).toBe(1_001);
  });
  it("stays exact past 2^53 micro-units", () => {
    const p = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 12_000_000_000, webSearch: 10_000_000_000 };
    expect(tokenCost(p, { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 900_000_000, webSearches: 1_000_000 })).toBe(10_800_000_000_000 + 10_000_000_000_000);
  });
});
