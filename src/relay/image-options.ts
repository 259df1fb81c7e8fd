import { GatewayError } from "../core/errors.ts";
import type { Model } from "../catalog/catalog.ts";

// What each OpenAI image model takes for `size`, `quality` and `n` (docs/api.md#rules, rule 13),
// known by the upstream model a route names. A value its model refuses was sent on and its 400
// passed through after the hold was taken; and the hold of a size no table lists was a guess
// (image-prices.ts, worstOutputTokens). A route to a model not listed here (another vendor's) is
// left to its upstream.

interface ImageOptions {
  /** The sizes it takes by name. */
  sizes: readonly string[];
  /** Also any WIDTHxHEIGHT within these bounds (gpt-image-2 and later). */
  anySize: boolean;
  qualities: readonly string[];
  maxN: number;
}

const GPT_IMAGE_SIZES = ["auto", "1024x1024", "1536x1024", "1024x1536"];
const GPT_IMAGE_QUALITIES = ["auto", "low", "medium", "high"];

// First match wins: gpt-image-2 before the other gpt-image models.
const FAMILIES: [RegExp, ImageOptions][] = [
  [/^gpt-image-[2-9]/, { sizes: GPT_IMAGE_SIZES, anySize: true, qualities: GPT_IMAGE_QUALITIES, maxN: 10 }],
  [/^(gpt-image-|chatgpt-image)/, { sizes: GPT_IMAGE_SIZES, anySize: false, qualities: GPT_IMAGE_QUALITIES, maxN: 10 }],
  [/^dall-e-3/, { sizes: ["1024x1024", "1792x1024", "1024x1792"], anySize: false, qualities: ["auto", "standard", "hd"], maxN: 1 }],
  [/^dall-e-2/, { sizes: ["256x256", "512x512", "1024x1024"], anySize: false, qualities: ["auto", "standard"], maxN: 10 }],
];

// gpt-image-2's free sizes (OpenAI's images reference): both sides divisible by 16, an aspect ratio
// from 1:3 to 3:1, at most 3840x2160 (its pixels, and its long side).
const MAX_SIDE = 3840;
const MAX_PIXELS = 3840 * 2160;
const FREE_SIZE = "WIDTHxHEIGHT with both sides divisible by 16, an aspect ratio from 1:3 to 3:1 and at most 3840x2160";

function freeSizeOk(size: string): boolean {
  const m = /^(\d{2,4})x(\d{2,4})$/.exec(size);
  if (!m) return false;
  const w = Number(m[1]);
  const h = Number(m[2]);
  return w % 16 === 0 && h % 16 === 0 && Math.max(w, h) <= MAX_SIDE && w * h <= MAX_PIXELS && Math.max(w, h) <= 3 * Math.min(w, h);
}

const optionsOf = (upstreamModel: string): ImageOptions | undefined => FAMILIES.find(([re]) => re.test(upstreamModel))?.[1];

const list = (values: readonly string[]) => `${values.slice(0, -1).join(", ")} or ${values.at(-1)}`;

/** What the request asks of the fields its price and its upstream depend on. */
export interface ImageOptionsAsked {
  n: number;
  quality: unknown;
  size: unknown;
}

/**
 * Refuses, with 400 invalid_request naming the field, a `size`, `quality` or `n` that a route of
 * `model` would refuse: every route is checked, as a fallback may serve the request. Before the hold.
 */
export function checkImageOptions(model: Model, ask: ImageOptionsAsked): void {
  for (const route of model.routes) {
    const o = optionsOf(route.upstreamModel);
    if (!o) continue;
    const refuse = (field: string, takes: string, got: unknown): never => {
      throw new GatewayError("invalid_request", `${field}: the model '${model.id}' takes ${takes}; got ${JSON.stringify(got)}.`);
    };
    const { size, quality, n } = ask;
    if (size !== undefined && size !== null && !(typeof size === "string" && (o.sizes.includes(size) || (o.anySize && freeSizeOk(size))))) {
      refuse("size", o.anySize ? `${o.sizes.join(", ")}, or ${FREE_SIZE}` : list(o.sizes), size);
    }
    if (quality !== undefined && quality !== null && !(typeof quality === "string" && o.qualities.includes(quality))) {
      refuse("quality", list(o.qualities), quality);
    }
    if (n > o.maxN) refuse("n", o.maxN === 1 ? "n = 1 only" : `n from 1 to ${o.maxN}`, n);
  }
}
