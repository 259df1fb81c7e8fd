import type { ModelConfig } from "../config/schema.ts";
import { usdToNano } from "../core/money.ts";

// An image model's prices (docs/pricing.md#images): per image, and per 1M tokens of each class the
// upstream's usage reports when the model is token-priced. Nano-dollars, per 1M tokens.

export interface ImageTokenPrices {
  /** Text input tokens (the prompt). */
  input: number;
  /** Image input tokens (an edit's sources). */
  imageInput: number;
  /** Output image tokens. */
  imageOutput: number;
  /** Output text tokens, when an upstream reports some: `output`, or the image output price when unset (never cheaper). */
  output: number;
}

export interface ImagePrices {
  /** Nano-dollars per image: the bill of a model priced per image, and of a token-priced one whose upstream reported no usage. */
  perImage: number;
  /** Set when the model is priced by image tokens (it configures image_input or image_output). */
  tokens: ImageTokenPrices | null;
}

/** An images answer's usage in the classes it is billed by. */
export interface ImageUsage {
  textInput: number;
  imageInput: number;
  imageOutput: number;
  textOutput: number;
}

export type ImageClass = keyof ImageUsage;
export const IMAGE_CLASSES: readonly ImageClass[] = ["textInput", "imageInput", "imageOutput", "textOutput"];
/** Each class under its config name. */
export const IMAGE_CONFIG_NAME: Record<ImageClass, "input" | "image_input" | "image_output" | "output"> = {
  textInput: "input",
  imageInput: "image_input",
  imageOutput: "image_output",
  textOutput: "output",
};

/** Whether the config prices this model by image tokens (config/load.ts then requires all three). */
export const tokenPriced = (p: ModelConfig["pricing"]): boolean => p.image_input !== undefined || p.image_output !== undefined;

export function imagePricesOf(m: ModelConfig): ImagePrices {
  const p = m.pricing;
  const perImage = usdToNano(p.per_image ?? 0);
  if (!tokenPriced(p)) return { perImage, tokens: null };
  const imageOutput = usdToNano(p.image_output ?? 0);
  return {
    perImage,
    tokens: {
      input: usdToNano(p.input ?? 0),
      imageInput: usdToNano(p.image_input ?? 0),
      imageOutput,
      output: p.output === undefined ? imageOutput : usdToNano(p.output),
    },
  };
}

/** The price of each class, by class, in nano-dollars per 1M tokens. */
export const classPrices = (t: ImageTokenPrices): Record<ImageClass, number> => ({
  textInput: t.input,
  imageInput: t.imageInput,
  imageOutput: t.imageOutput,
  textOutput: t.output,
});

/**
 * Σ count × price per class, rounded up once to the nano-dollar (as text usage is, money.ts
 * tokenCost). BigInt: a count a hostile upstream reports can make the products pass 2^53.
 */
export function imageTokenCost(t: ImageTokenPrices, u: ImageUsage): number {
  const prices = classPrices(t);
  let micro = 0n;
  for (const c of IMAGE_CLASSES) micro += BigInt(u[c]) * BigInt(prices[c]);
  return Number((micro + 999_999n) / 1_000_000n);
}

export const TABLE_SIZES = ["1024x1024", "1024x1536", "1536x1024"] as const;
/** OpenAI's output image tokens per image of gpt-image-1 and later, by quality, for TABLE_SIZES. */
export const OUTPUT_TOKENS: Record<string, readonly number[]> = {
  low: [272, 408, 400],
  medium: [1056, 1584, 1568],
  high: [4160, 6240, 6208],
};

/**
 * The most output tokens one image of this quality and size can take: `auto`, an absent or unknown
 * quality (`standard`, `hd`) is the highest; `auto` or an absent size the largest; another WIDTHxHEIGHT
 * (models that take any size) the square's count scaled by area, rounded up.
 */
export function worstOutputTokens(quality: unknown, size: unknown): number {
  const row = typeof quality === "string" && Object.hasOwn(OUTPUT_TOKENS, quality) ? OUTPUT_TOKENS[quality]! : OUTPUT_TOKENS.high!;
  const at = TABLE_SIZES.indexOf(size as (typeof TABLE_SIZES)[number]);
  if (at >= 0) return row[at]!;
  const m = typeof size === "string" ? /^(\d{1,5})x(\d{1,5})$/.exec(size) : null;
  if (m) return Math.max(1, Math.ceil((row[0]! * Number(m[1]) * Number(m[2])) / (1024 * 1024)));
  return Math.max(...row);
}
