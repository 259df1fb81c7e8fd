import { describe, expect, it } from "bun:test";
import { worstOutputTokens, type ImagePrices } from "../../src/catalog/image-prices.ts";
import { billImages, imageHoldNano, readImageUsage, SOURCE_IMAGE_TOKENS } from "../../src/relay/image-billing.ts";

// The images hold and charge rules (docs/pricing.md#images) on the cases the SDK tests do not reach:
// `auto` and unknown values held at the worst, sources held per image, usages without a split.

const GPT_IMAGE: ImagePrices = { perImage: 167_000_000, tokens: { input: 5_000_000_000, imageInput: 10_000_000_000, imageOutput: 40_000_000_000, output: 40_000_000_000 } };
const ask = (over: Partial<Parameters<typeof imageHoldNano>[1]> = {}) => ({ n: 1, quality: "high", size: "1024x1024", promptBytes: 0, inputImages: 0, ...over });

describe("the output tokens an image is held at", () => {
  it("reads OpenAI's table for a quality and size it lists", () => {
    expect([worstOutputTokens("low", "1024x1024"), worstOutputTokens("medium", "1024x1024"), worstOutputTokens("high", "1024x1536")]).toEqual([272, 1056, 6240]);
  });
  it("holds auto quality and auto size at the worst: high, 1024x1536", () => {
    expect(worstOutputTokens("auto", "auto")).toBe(6240);
    expect(worstOutputTokens(undefined, undefined)).toBe(6240);
  });
  it("holds a size outside the table at the square's count scaled by area", () => {
    expect(worstOutputTokens("high", "2048x2048")).toBe(4 * 4160);
  });
});

describe("the hold of a token-priced model", () => {
  it("covers n images of the quality asked and the prompt's bytes as text tokens", () => {
    // 2 × 6,240 × 40 + 100 × 5 USD per 1M
    expect(imageHoldNano(GPT_IMAGE, ask({ n: 2, size: "auto", promptBytes: 100 }))).toBe(499_200_000 + 500_000);
  });
  it("covers each edit source at SOURCE_IMAGE_TOKENS", () => {
    const p = { ...GPT_IMAGE, perImage: 0 };
    expect(imageHoldNano(p, ask({ inputImages: 3 })) - imageHoldNano(p, ask())).toBe(3 * SOURCE_IMAGE_TOKENS * 10_000);
  });
  it("is never under per_image × n, the bill when no usage comes", () => {
    expect(imageHoldNano(GPT_IMAGE, ask({ quality: "low", n: 3 }))).toBe(3 * 167_000_000);
  });
});

describe("an images usage in billing classes", () => {
  it("bills an edit's input without a split as image input", () => {
    expect(readImageUsage({ input_tokens: 700, output_tokens: 4160 }, true)).toEqual({ textInput: 0, imageInput: 700, imageOutput: 4160, textOutput: 0 });
  });
  it("bills a generation's input without a split as text", () => {
    expect(readImageUsage({ input_tokens: 7, output_tokens: 272 }, false)).toEqual({ textInput: 7, imageInput: 0, imageOutput: 272, textOutput: 0 });
  });
  it("bills text output tokens at the output price, apart from image output", () => {
    const u = readImageUsage({ input_tokens: 7, output_tokens: 300, output_tokens_details: { image_tokens: 272, text_tokens: 28 } }, false)!;
    expect(u).toMatchObject({ imageOutput: 272, textOutput: 28 });
    const p: ImagePrices = { ...GPT_IMAGE, tokens: { ...GPT_IMAGE.tokens!, output: 10_000_000_000 } };
    expect(billImages(p, u, 1, 1).costNano).toBe(35_000 + 10_880_000 + 280_000);
  });
  it("is no usage when a detail count is not a whole number", () => {
    expect(readImageUsage({ input_tokens: 7, output_tokens: 272, input_tokens_details: { text_tokens: "7" } }, false)).toBeNull();
  });
});
