import { afterAll, beforeAll, beforeEach, describe, expect, it } from "bun:test";
import OpenAI, { toFile } from "openai";
import { gateway, gatewayJson } from "../support/cli.ts";
import { startGatewayWithInstallation, type TestGateway } from "../support/gateway.ts";
import { sqlGet } from "../support/keyed.ts";
import { encodePng, type MockUpstream } from "../support/mock-upstream.ts";

// Images billed by the upstream's token usage (docs/pricing.md#images), through the official SDK:
// a token-priced model pays each class the answer reports, per image only without a usage; a model
// priced per image ignores the usage; never more images than asked; the hold covers the worst case.

const PROMPT = "a cat in a hat"; // 14 characters: the mock counts 4 text tokens
const TEXT_NANO = 4 * 5_000; // 4 tokens × 5 USD per 1M
const GPT_IMAGE = { input: 5, image_input: 10, image_output: 40 };
const model = (id: string, pricing: Record<string, number>) => ({
  id, modalities: ["image"], endpoints: ["images.generations", "images.edits"], pricing, routes: [{ provider: "openai", model: "gpt-image-1" }],
});
const MODELS = [
  model("gpt-image", { ...GPT_IMAGE, per_image: 0.167 }),
  // Its fallback at the low-quality price: the hold follows the quality asked, not the fallback.
  model("gpt-image-cheap-fallback", { ...GPT_IMAGE, per_image: 0.011 }),
  model("flat-image", { per_image: 0.04 }),
];

let up: MockUpstream;
let gw: TestGateway;
let stop: () => Promise<void>;
let install: Awaited<ReturnType<typeof startGatewayWithInstallation>>["install"];
beforeAll(async () => {
  ({ up, gw, stop, install } = await startGatewayWithInstallation(MODELS));
});
afterAll(() => stop());
beforeEach(() => up.reset());

const sdk = (key: string) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
const costOf = (r: { usage?: unknown }) => (r.usage as { cost_usd: number }).cost_usd;
const png = (i: number) => toFile(encodePng(8, 8), `source-${i}.png`, { type: "image/png" });

async function generate(key: string, modelId: string, quality: "low" | "high", n = 1) {
  const { data, response } = await sdk(key).images.generate({ model: modelId, prompt: PROMPT, quality, size: "1024x1024", n }).withResponse();
  return { data, requestId: response.headers.get("x-gateway-request-id")! };
}

async function editTwo(key: string) {
  const image = [await png(0), await png(1)];
  const { data, response } = await sdk(key).images.edit({ model: "gpt-image", prompt: PROMPT, image, quality: "high", size: "1024x1024" }).withResponse();
  return { data, requestId: response.headers.get("x-gateway-request-id")! };
}

const charged = (accountId: number, startUsd: number) => startUsd * 1e9 - gw.money(accountId).balance;

describe("token-priced generations are billed from the upstream's usage", () => {
  it("bills quality high 1024x1024 at its 4,160 output tokens: 0.16642 USD", async () => {
    const a = await gw.account(5);
    const r = await generate(a.key, "gpt-image", "high");
    expect(charged(a.accountId, 5)).toBe(TEXT_NANO + 4_160 * 40_000);
    expect(costOf(r.data)).toBe(0.16642);
    expect(gw.money(a.accountId)).toMatchObject({ openHolds: 0, reserved: 0 });
  });

  it("bills quality low 1024x1024 at its 272 output tokens: 0.0109 USD", async () => {
    const a = await gw.account(5);
    const r = await generate(a.key, "gpt-image", "low");
    expect(charged(a.accountId, 5)).toBe(TEXT_NANO + 272 * 40_000);
    expect(costOf(r.data)).toBe(0.0109);
  });

  it("bills an upstream that made 3 images for n=1 as one image's share of the output", async () => {
    const a = await gw.account(5);
    up.script({ kind: "images", n: 3 });
    const r = await generate(a.key, "gpt-image", "high");
    expect(r.data.data).toHaveLength(1);
    expect(charged(a.accountId, 5)).toBe(TEXT_NANO + 4_160 * 40_000);
    expect(r.data.usage).toMatchObject({ output_tokens: 4_160, cost_usd: 0.16642 });
  });

  it("bills per_image × images when the upstream reports no usage", async () => {
    const a = await gw.account(5);
    up.script({ kind: "images", usage: false });
    const r = await generate(a.key, "gpt-image", "low", 2);
    expect(charged(a.accountId, 5)).toBe(2 * 167_000_000);
    expect(costOf(r.data)).toBe(0.334);
  });

  it("bills per_image × images when the usage's counts are not whole numbers", async () => {
    const a = await gw.account(5);
    up.script({ kind: "images", usage: { input_tokens: 4, output_tokens: -4160, total_tokens: 0 } });
    await generate(a.key, "gpt-image", "high");
    expect(charged(a.accountId, 5)).toBe(167_000_000);
  });
});

describe("token-priced edits bill their source images", () => {
  it("bills two sources' image input tokens with the output and the prompt", async () => {
    const a = await gw.account(5);
    const r = await editTwo(a.key);
    // The mock reports 323 image tokens per source: 646 × 10 USD per 1M.
    const expected = TEXT_NANO + 646 * 10_000 + 4_160 * 40_000;
    expect(charged(a.accountId, 5)).toBe(expected);
    expect(costOf(r.data)).toBe(expected / 1e9);
  });
});

describe("a model priced per image", () => {
  it("ignores the usage the upstream reports: 0.04 USD an image whatever the quality", async () => {
    const a = await gw.account(5);
    await generate(a.key, "flat-image", "high");
    await generate(a.key, "flat-image", "low");
    expect(charged(a.accountId, 5)).toBe(2 * 40_000_000);
  });

  it("bills an upstream that made 3 images for n=1 as one image", async () => {
    const a = await gw.account(5);
    up.script({ kind: "images", n: 3 });
    await generate(a.key, "flat-image", "high");
    expect(charged(a.accountId, 5)).toBe(40_000_000);
  });
});

describe("the hold covers the worst case of the quality, size and count asked", () => {
  it("refuses high quality with 402 on a balance that covers low quality, sending nothing upstream", async () => {
    const a = await gw.account("0.05");
    await generate(a.key, "gpt-image-cheap-fallback", "low");
    const err = await generate(a.key, "gpt-image-cheap-fallback", "high").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(402);
    expect((err as { error?: { type?: string } }).error?.type).toBe("insufficient_balance");
    expect(up.hits["POST /v1/images/generations"]).toBe(1);
    expect(gw.money(a.accountId)).toMatchObject({ balance: 50_000_000 - TEXT_NANO - 272 * 40_000, openHolds: 0 });
  });

  it("refuses n=2 at high quality on a balance that covers one", async () => {
    const a = await gw.account("0.2");
    const err = await generate(a.key, "gpt-image-cheap-fallback", "high", 2).catch((e: unknown) => e);
    expect((err as { status?: number }).status).toBe(402);
    await generate(a.key, "gpt-image-cheap-fallback", "high", 1);
    expect(charged(a.accountId, 0.2)).toBe(TEXT_NANO + 4_160 * 40_000);
  });
});

describe("the request log keeps the image token counts", () => {
  it("in its row: prompt tokens in input_tokens, the sources' and the output's in image_input_tokens and image_output_tokens", async () => {
    const a = await gw.account(5);
    const { requestId } = await editTwo(a.key);
    const row = sqlGet(gw, "SELECT input_tokens, output_tokens, image_input_tokens, image_output_tokens, images, cost_nano FROM request_logs WHERE request_id = ?", requestId);
    expect(row).toEqual({ input_tokens: 4, output_tokens: 0, image_input_tokens: 646, image_output_tokens: 4_160, images: 1, cost_nano: TEXT_NANO + 646 * 10_000 + 4_160 * 40_000 });
  });

  it("so gateway logs show rebuilds an edit's cost class by class", async () => {
    const a = await gw.account(5);
    const { requestId } = await editTwo(a.key);
    const args = ["logs", "show", requestId, "--config", install.config, "--db", gw.config.database];
    const doc = await gatewayJson<{ cost_lines: Record<string, unknown>[]; price_table: string; cost_usd: number }>(args);
    expect(doc.price_table).toBe("image tokens");
    expect(doc.cost_lines).toEqual([
      { class: "input", count: 4, price_usd: "5", unit: "per 1M tokens", cost_usd: "0.00002" },
      { class: "image_input", count: 646, price_usd: "10", unit: "per 1M tokens", cost_usd: "0.00646" },
      { class: "image_output", count: 4_160, price_usd: "40", unit: "per 1M tokens", cost_usd: "0.1664" },
    ]);
    expect(doc.cost_usd).toBe(0.17288);
    expect((await gateway(args)).stdout).toContain("total, rounded up once: 0.17288 USD (as charged)");
  });

  it("and a per-image answer as images × per_image", async () => {
    const a = await gw.account(5);
    const { requestId } = await generate(a.key, "flat-image", "high", 2);
    const doc = await gatewayJson<{ cost_lines: Record<string, unknown>[]; cost_usd: number }>(["logs", "show", requestId, "--config", install.config, "--db", gw.config.database]);
    expect(doc.cost_lines).toEqual([{ class: "per_image", count: 2, price_usd: "0.04", unit: "per image", cost_usd: "0.08" }]);
    expect(doc.cost_usd).toBe(0.08);
  });
});

describe("gateway prices", () => {
  it("shows an image model's token classes and its per-image price", async () => {
    const doc = await gatewayJson<{ model: string; billed_by?: string; prices: Record<string, { usd: number; unit: string }> }[]>(["prices", "--config", install.config]);
    const image = doc.find((m) => m.model === "gpt-image")!;
    expect(image.billed_by).toBe("image tokens");
    expect(image.prices).toMatchObject({
      input: { usd: 5, unit: "per 1M tokens" }, image_input: { usd: 10 }, image_output: { usd: 40 }, per_image: { usd: 0.167, unit: "per image" },
    });
    expect(doc.find((m) => m.model === "flat-image")!.billed_by).toBe("per image");
  });
});

describe("GET /api/pricing", () => {
  it("publishes a token-priced image model's token prices beside its per-image price", async () => {
    const body = (await (await fetch(`${gw.url}/api/pricing`)).json()) as { models: Record<string, unknown>[] };
    expect(body.models.find((m) => m.id === "gpt-image")).toMatchObject({ per_image: 0.167, unit: "per 1M tokens", input: 5, image_input: 10, image_output: 40 });
    expect(body.models.find((m) => m.id === "flat-image")).not.toHaveProperty("image_output");
  });
});
