import { afterAll, beforeAll, beforeEach, describe, expect, it } from "bun:test";
import OpenAI, { toFile } from "openai";
import { startGatewayOnMock, type TestGateway } from "../support/gateway.ts";
import { encodePng, type MockFile, type MockUpstream } from "../support/mock-upstream.ts";
import { MOCK_SOURCE_TOKENS } from "../support/mock-images.ts";

// The image request fields of the openai SDK (7.57) that the hold did not read (docs/api.md#rules,
// rule 10; docs/pricing.md#images), through the SDK against the loopback image upstream: each is
// refused before the hold, held and billed, or passed on, and the balance checked after each.

const PRICING = { input: 5, image_input: 10, image_output: 40, per_image: 0.167 };
const MODELS = [{
  id: "img-2.5", modalities: ["image"], endpoints: ["images.generations", "images.edits"], pricing: PRICING,
  routes: [{ provider: "openai", model: "gpt-image-2.5-sunburst" }],
}];

let up: MockUpstream;
let gw: TestGateway;
let stop: () => Promise<void>;
beforeAll(async () => {
  ({ up, gw, stop } = await startGatewayOnMock({ openai: true, models: MODELS, limits: { default_rpm: 10_000 } }));
});
afterAll(() => stop());
beforeEach(() => up.reset());

const sdk = (key: string) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
type Generate = Parameters<OpenAI["images"]["generate"]>[0];
type Edit = Parameters<OpenAI["images"]["edit"]>[0];
const png = (name = "a.png") => toFile(encodePng(8, 8), name, { type: "image/png" });
const PROMPT = "a cat in a hat"; // 14 characters: the mock counts 4 text tokens, the hold 14
const charged = (accountId: number, startUsd: number) => startUsd * 1e9 - gw.money(accountId).balance;

/** The SDK's error for a request the gateway refuses, with the balance and the upstream untouched. */
async function refused(run: (c: OpenAI) => Promise<unknown>): Promise<{ status: number | undefined; code: string; message: string }> {
  const a = await gw.account(5);
  const err = (await run(sdk(a.key)).catch((e) => e)) as InstanceType<typeof OpenAI.APIError>;
  expect(err).toBeInstanceOf(OpenAI.APIError);
  expect(gw.money(a.accountId)).toMatchObject({ balance: 5_000_000_000, reserved: 0, openHolds: 0 });
  expect(up.requests).toHaveLength(0);
  const body = err.error as { code: string; message: string };
  return { status: err.status, code: body.code, message: body.message };
}

const UNPRICED: [string, unknown][] = [
  ["complexity", "high"],
  ["frame_count", 16],
  ["frame_duration_ms", 500],
  ["svg", { model: "gpt-5.5", reasoning: { effort: "max" } }],
  ["partial_images", 3],
];

describe("a field whose bill OpenAI does not publish", () => {
  it.each(UNPRICED)("refuses %s on a generation with 400 invalid_request naming it and why, before any hold", async (field, value) => {
    const e = await refused((c) => c.images.generate({ model: "img-2.5", prompt: PROMPT, [field]: value } as Generate));
    expect(e).toMatchObject({ status: 400, code: "invalid_request" });
    expect(e.message).toStartWith(`${field}: not priced by this gateway: `);
  });

  it.each(UNPRICED)("refuses %s on an edit (multipart, svg as svg[model]) the same way", async (field, value) => {
    const image = await png();
    const e = await refused((c) => c.images.edit({ model: "img-2.5", prompt: PROMPT, image, [field]: value } as Edit));
    expect(e).toMatchObject({ status: 400, code: "invalid_request" });
    expect(e.message).toStartWith(`${field}: not priced by this gateway: `);
  });

  it("takes complexity: null as absent, as OpenAI does, and bills the usage", async () => {
    const a = await gw.account(5);
    await sdk(a.key).images.generate({ model: "img-2.5", prompt: PROMPT, quality: "low", size: "1024x1024", complexity: null });
    expect(charged(a.accountId, 5)).toBe(4 * 5_000 + 272 * 40_000);
  });
});

describe("a field the gateway does not know", () => {
  it("is refused with 400 invalid_request naming it, before any hold: what it bills is unknown", async () => {
    const e = await refused((c) => c.images.generate({ model: "img-2.5", prompt: PROMPT, prompt_rewriter: "none" } as Generate));
    expect(e).toMatchObject({ status: 400, code: "invalid_request" });
    expect(e.message).toStartWith("prompt_rewriter: not a field this gateway knows on images.generations");
  });

  it("is refused on an edit too (moderation is a generation's field)", async () => {
    const image = await png();
    const e = await refused((c) => c.images.edit({ model: "img-2.5", prompt: PROMPT, image, moderation: "low" } as Edit));
    expect(e.message).toStartWith("moderation: not a field this gateway knows on images.edits");
  });
});

describe("a field that cannot change the bill", () => {
  it("is passed on: output_compression, safety_identifier, user, moderation, background; the usage is billed", async () => {
    const a = await gw.account(5);
    const asked = { output_format: "webp", output_compression: 50, safety_identifier: "u-hash", user: "u-1", moderation: "low", background: "opaque" } as const;
    await sdk(a.key).images.generate({ model: "img-2.5", prompt: PROMPT, quality: "low", size: "1024x1024", ...asked });
    expect(up.requests.at(-1)!.body).toMatchObject(asked);
    expect(charged(a.accountId, 5)).toBe(4 * 5_000 + 272 * 40_000);
  });
});

describe("an edit's markup image", () => {
  // high 1024x1024: 4,160 × 40 + 14 prompt bytes × 5 + 8,000 image tokens × 10 per input image (USD per 1M)
  const HOLD_ONE_SOURCE = 166_400_000 + 70_000 + 80_000_000;

  it("is held as an input image: a balance that covers one source gets 402 with a markup, sending nothing", async () => {
    const a = await gw.account(0.25);
    expect(HOLD_ONE_SOURCE).toBeLessThan(250_000_000);
    expect(HOLD_ONE_SOURCE + 80_000_000).toBeGreaterThan(250_000_000);
    const err = await sdk(a.key).images.edit({ model: "img-2.5", prompt: PROMPT, image: await png(), markup: await png("m.png"), quality: "high", size: "1024x1024" }).catch((e) => e);
    expect(err.status).toBe(402);
    expect(err.error.code).toBe("insufficient_balance");
    expect(up.requests).toHaveLength(0);
    expect(gw.money(a.accountId)).toMatchObject({ balance: 250_000_000, reserved: 0, openHolds: 0 });
  });

  it("is billed at the image input tokens the upstream reports for it, and sent typed as PNG", async () => {
    const a = await gw.account(5);
    const markup = await toFile(encodePng(8, 8), "markup"); // no type, no extension: sent as octet-stream by the SDK
    await sdk(a.key).images.edit({ model: "img-2.5", prompt: PROMPT, image: await png(), markup, quality: "high", size: "1024x1024" });
    const sent = (up.requests.at(-1)!.body as Record<string, MockFile>).markup!;
    expect([sent.type, sent.filename]).toEqual(["image/png", "markup.png"]);
    expect(charged(a.accountId, 5)).toBe(4 * 5_000 + 2 * MOCK_SOURCE_TOKENS * 10_000 + 4_160 * 40_000);
    expect(gw.money(a.accountId)).toMatchObject({ reserved: 0, openHolds: 0 });
  });

  it("is refused with mask beside it (OpenAI takes one or the other), before any hold", async () => {
    const [image, mask, markup] = [await png(), await png("mask.png"), await png("m.png")];
    const e = await refused((c) => c.images.edit({ model: "img-2.5", prompt: PROMPT, image, mask, markup }));
    expect(e).toMatchObject({ status: 400, code: "invalid_request" });
    expect(e.message).toStartWith("markup: cannot be combined with mask");
  });

  it("is refused when its bytes are no PNG, naming markup, before any hold", async () => {
    const [image, markup] = [await png(), await toFile(Buffer.from("not an image"), "m.png", { type: "image/png" })];
    const e = await refused((c) => c.images.edit({ model: "img-2.5", prompt: PROMPT, image, markup }));
    expect(e).toMatchObject({ status: 400, code: "invalid_request" });
    expect(e.message).toStartWith("markup: not an image");
  });
});
