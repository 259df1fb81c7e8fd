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
