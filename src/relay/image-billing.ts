import { imageTokenCost, worstOutputTokens, type ImagePrices, type ImageUsage } from "../catalog/image-prices.ts";
import type { JsonObject } from "../wire/shapes.ts";
import { isObject } from "../dialects/fields.ts";

// What an images request is held and charged (docs/pricing.md#images): the upstream's token usage
// at the model's image token prices when it is token-priced and the usage is valid, else per image;
// never more images than asked; the hold at the worst case of the quality, size and count asked.

/** What an images request asks for that its price depends on. */
export interface ImageAsk {
  n: number;
  quality: unknown;
  size: unknown;
  /** The prompt's UTF-8 bytes: no tokenizer makes more tokens than bytes, so its text input tokens are at most this. */
  promptBytes: number;
  /** Images sent as input (an edit's sources and its mask): each is held at SOURCE_IMAGE_TOKENS. */
  inputImages: number;
}

/**
 * The image input tokens one source is held at. OpenAI does not publish a table for input images; a
 * 1024² source is reported near 3,050 tokens at `input_fidelity: "high"` (about 135 at low) and the
 * vision tiles of the largest source stay under 1,100: 8,000 covers a non-square source at high
 * fidelity with room to spare. Only the hold uses it; the charge reads the usage.
 */
export const SOURCE_IMAGE_TOKENS = 8_000;

/** The request's hold: per image × n, and for a token-priced model the worst its usage can say, whichever is more. */
export function imageHoldNano(p: ImagePrices, ask: ImageAsk): number {
  const perImage = p.perImage * ask.n;
  if (!p.tokens) return perImage;
  const worst = imageTokenCost(p.tokens, {
    textInput: ask.promptBytes,
    imageInput: ask.inputImages * SOURCE_IMAGE_TOKENS,
    imageOutput: worstOutputTokens(ask.quality, ask.size) * ask.n,
    textOutput: 0,
  });
  return Math.max(perImage, worst);
}

const whole = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;

/** A details object is valid when absent, or an object whose counts present are whole. */
function details(v: unknown): { ok: boolean; text: number; image: number } {
  if (v === undefined || v === null) return { ok: true, text: 0, image: 0 };
  if (!isObject(v)) return { ok: false, text: 0, image: 0 };
  const t = v.text_tokens ?? 0;
  const i = v.image_tokens ?? 0;
  return whole(t) && whole(i) ? { ok: true, text: t, image: i } : { ok: false, text: 0, image: 0 };
}

/**
 * An ImagesResponse usage in billing classes, or null when it is no usage (absent, or a count that is
 * not a whole number): the caller bills per image. Input past the split (or without one) is image
 * input on an edit, text on a generation (which sends no image); output past its split is image
 * output. A split above its total is billed as split.
 */
export function readImageUsage(u: unknown, edit: boolean): ImageUsage | null {
  if (!isObject(u) || !whole(u.input_tokens) || !whole(u.output_tokens)) return null;
  const inD = details(u.input_tokens_details);
  const outD = details(u.output_tokens_details);
  if (!inD.ok || !outD.ok) return null;
  const restIn = Math.max(0, u.input_tokens - inD.text - inD.image);
  const restOut = Math.max(0, u.output_tokens - outD.text - outD.image);
  return {
    textInput: inD.text + (edit ? 0 : restIn),
    imageInput: inD.image + (edit ? restIn : 0),
    imageOutput: outD.image + restOut,
    textOutput: outD.text,
  };
}

export interface ImageBill {
  costNano: number;
  /** The counts billed (output cut to the images asked), or null when billed per image. */
  usage: ImageUsage | null;
}

/**
 * The charge of an answer with `returned` images to a request for `asked`: its usage at the token
 * prices, its output cut to `asked` images' share (rounded up) when the upstream made more; per image
 * for the images kept when the model is priced per image or the usage is no usage.
 */
export function billImages(p: ImagePrices, usage: ImageUsage | null, returned: number, asked: number): ImageBill {
  if (!p.tokens || !usage) return { costNano: Math.min(returned, asked) * p.perImage, usage: null };
  const share = (count: number) => (returned > asked ? Math.ceil((count * asked) / returned) : count);
  const billed = { ...usage, imageOutput: share(usage.imageOutput), textOutput: share(usage.textOutput) };
  return { costNano: imageTokenCost(p.tokens, billed), usage: billed };
}

/** The answer's usage as the client sees it: the counts billed (when cut to the images asked) and the charge. */
export function usageShown(upstream: unknown, bill: ImageBill, costUsd: number): JsonObject {
  const shown: JsonObject = { ...(isObject(upstream) ? upstream : {}) };
  const u = bill.usage;
  if (u && whole(shown.output_tokens) && shown.output_tokens > u.imageOutput + u.textOutput) {
    shown.output_tokens = u.imageOutput + u.textOutput;
    if (whole(shown.input_tokens)) shown.total_tokens = shown.input_tokens + u.imageOutput + u.textOutput;
    if (isObject(shown.output_tokens_details)) shown.output_tokens_details = { ...shown.output_tokens_details, image_tokens: u.imageOutput, text_tokens: u.textOutput };
  }
  shown.cost_usd = costUsd;
  return shown;
}
