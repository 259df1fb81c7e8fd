import { afterAll, beforeAll, beforeEach, describe, expect, it } from "bun:test";
import OpenAI, { toFile } from "openai";
import { startGatewayOnMock, type TestGateway } from "../support/gateway.ts";
import { encodePng, type MockUpstream } from "../support/mock-upstream.ts";

// size, quality and n checked against what the route's upstream model takes (docs/api.md#rules,
// rule 13), through the official SDK: refused with the house 400 before anything is held or sent.

const model = (id: string, upstream: string) => ({
  id, modalities: ["image"], endpoints: ["images.generations", "images.edits"],
  pricing: { input: 5, image_input: 10, image_output: 40, per_image: 0.167 }, routes: [{ provider: "openai", model: upstream }],
});
const MODELS = [
  model("img-1", "gpt-image-1"),
  model("img-2", "gpt-image-2"),
  model("dalle-3", "dall-e-3"),
  model("dalle-2", "dall-e-2"),
  model("other-vendor", "flux-pro"),
  model("img-2.5", "gpt-image-2.5-sunburst"),
  // A fallback to gpt-image-1 behind gpt-image-2: a size only gpt-image-2 takes could reach gpt-image-1.
  { ...model("img-2-fallback-1", "gpt-image-2"), routes: [{ provider: "openai", model: "gpt-image-2" }, { provider: "openai", model: "gpt-image-1" }] },
];

let up: MockUpstream;
let gw: TestGateway;
let stop: () => Promise<void>;
let account: { key: string; accountId: number };
beforeAll(async () => {
  ({ up, gw, stop } = await startGatewayOnMock({ openai: true, models: MODELS, limits: { default_rpm: 10_000 } }));
  account = await gw.account(5);
});
afterAll(() => stop());
beforeEach(() => up.reset());

const sdk = () => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: account.key, maxRetries: 0 });
type Generate = Parameters<OpenAI["images"]["generate"]>[0];

/** The SDK's error for a generation the gateway refuses, with the books and the upstream untouched. */
async function refused(params: Record<string, unknown>): Promise<{ status: number; code: string; message: string }> {
  const before = gw.money(account.accountId);
  const err = await sdk().images.generate({ prompt: "a cat", ...params } as Generate).catch((e) => e);
  expect(err).toBeInstanceOf(OpenAI.APIError);
  expect(gw.money(account.accountId)).toEqual(before);
  expect(up.requests).toHaveLength(0);
  return { status: err.status, code: err.error.code, message: err.error.message };
}

describe("a size the model does not take", () => {
  it.each([
    ["img-1", "512x512"],
    ["img-1", "2048x2048"],
    ["dalle-3", "1024x1536"],
    ["dalle-2", "1792x1024"],
    ["img-2", "1000x1000"], // not divisible by 16
    ["img-2", "3840x768"], // wider than 3:1
    ["img-2", "4096x2304"], // past 3840x2160
    ["img-2", "big"],
  ])("is refused on %s (%s) with 400 invalid_request naming size, before any hold", async (m, size) => {
    const e = await refused({ model: m, size });
    expect(e).toMatchObject({ status: 400, code: "invalid_request" });
    expect(e.message).toStartWith(`size: the model '${m}' takes `);
    expect(e.message).toContain(`got "${size}"`);
  });

  it("is refused when a fallback route's model would refuse it", async () => {
    const e = await refused({ model: "img-2-fallback-1", size: "1536x864" });
    expect(e.message).toStartWith("size: the model 'img-2-fallback-1' takes auto, 1024x1024, 1536x1024 or 1024x1536");
  });
});

describe("a quality or n the model does not take", () => {
  it.each([
    ["img-1", "hd"],
    ["dalle-3", "high"],
    ["dalle-2", "hd"],
  ])("refuses quality on %s (%s) with 400 invalid_request naming quality", async (m, quality) => {
    const e = await refused({ model: m, quality });
    expect(e).toMatchObject({ status: 400, code: "invalid_request" });
    expect(e.message).toStartWith(`quality: the model '${m}' takes `);
  });

  it("refuses n = 2 on dall-e-3, which makes one image a request", async () => {
    const e = await refused({ model: "dalle-3", n: 2 });
    expect(e).toMatchObject({ status: 400, code: "invalid_request" });
    expect(e.message).toBe("n: the model 'dalle-3' takes n = 1 only; got 2.");
  });

  it("refuses an edit's size the model does not take, read from the form", async () => {
    const before = gw.money(account.accountId);
    const image = await toFile(encodePng(8, 8), "a.png", { type: "image/png" });
    const err = await sdk().images.edit({ model: "img-1", prompt: "blue", image, size: "512x512" }).catch((e) => e);
    expect(err.status).toBe(400);
    expect(err.error.message).toStartWith("size: the model 'img-1' takes ");
    expect(gw.money(account.accountId)).toEqual(before);
    expect(up.requests).toHaveLength(0);
  });
});

// The openai SDK (7.57) lists them: OpenAI publishes no output tokens per image for xhigh or max
// (gpt-image-2.5), a GIF's frames have no published count, and SVG bills an author model's text
// tokens in a separate svg_usage. No hold can be sized to cover them (docs/pricing.md#images).
describe("a quality or output format the gateway cannot price", () => {
  it.each([
    ["quality", "xhigh"],
    ["quality", "max"],
    ["output_format", "gif"],
    ["output_format", "svg"],
  ])("refuses %s %j, even on gpt-image-2.5 which takes it, with 400 naming why, before any hold", async (field, value) => {
    const e = await refused({ model: "img-2.5", [field]: value });
    expect(e).toMatchObject({ status: 400, code: "invalid_request" });
    expect(e.message).toStartWith(`${field}: ${JSON.stringify(value)} is not priced by this gateway: `);
  });
});

describe("what the model takes", () => {
  it.each([
    ["img-1", { size: "1536x1024", quality: "low" }],
    ["img-1", { size: "auto", quality: "auto", n: 2 }],
    ["img-2", { size: "1536x864", quality: "medium" }],
    ["img-2", { size: "3840x2160", quality: "low" }],
    ["dalle-3", { size: "1792x1024", quality: "hd" }],
    ["dalle-2", { size: "256x256", quality: "standard", n: 3 }],
    ["other-vendor", { size: "2048x2048" }], // a model no table lists: its upstream decides
  ])("passes on %s with %o, and is charged", async (m, params) => {
    const res = await sdk().images.generate({ model: m, prompt: "a cat", ...params } as Generate);
    expect(((res as { usage?: unknown }).usage as { cost_usd: number }).cost_usd).toBeGreaterThan(0);
    expect(up.requests).toHaveLength(1);
  });
});
