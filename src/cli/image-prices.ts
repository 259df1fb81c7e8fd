import type { Catalog, Model } from "../catalog/catalog.ts";
import { classPrices, IMAGE_CLASSES, IMAGE_CONFIG_NAME, imageTokenCost, type ImageUsage } from "../catalog/image-prices.ts";
import { formatUsd } from "../core/money.ts";
import { microNanoUsd, type CostLine } from "./format.ts";

// Image models in `gateway prices` and `gateway logs show` (docs/pricing.md#images): per image, and
// per 1M tokens of each image class when the model is token-priced.

export const imageModels = (c: Catalog): Model[] => c.models.filter((m) => m.endpoints.some((e) => e.startsWith("images.")));

/** One row per priced class of an image model: [class, usd, unit, source]. */
export function imagePriceRows(m: Model): [string, string, string, string][] {
  const p = m.imagePrices;
  const rows: [string, string, string, string][] = [];
  if (p.tokens) {
    const prices = classPrices(p.tokens);
    for (const c of IMAGE_CLASSES) {
      const unset = c === "textOutput" && m.publicPricing.output === undefined;
      rows.push([IMAGE_CONFIG_NAME[c], formatUsd(prices[c]), "per 1M tokens", unset ? "image_output (unset, billed at the image output price)" : "configured"]);
    }
  }
  rows.push(["per_image", formatUsd(p.perImage), "per image", p.tokens ? "configured (when the upstream reports no usage)" : "configured"]);
  return rows;
}

/**
 * A logged images request's cost line by line: each image class at today's token prices when it was
 * billed by tokens (the row has image counts), else its images at the per-image price.
 */
export function imageCostLines(m: Model, row: { inputTokens: number | null; outputTokens: number | null; imageInputTokens: number | null; imageOutputTokens: number | null; images: number | null }): { table: string; lines: CostLine[]; totalNano: number } | null {
  const p = m.imagePrices;
  if (p.tokens && row.imageOutputTokens !== null) {
    const u: ImageUsage = { textInput: row.inputTokens ?? 0, imageInput: row.imageInputTokens ?? 0, imageOutput: row.imageOutputTokens, textOutput: row.outputTokens ?? 0 };
    const prices = classPrices(p.tokens);
    const lines = IMAGE_CLASSES.filter((c) => u[c] > 0 || c !== "textOutput").map((c): CostLine => ({
      class: IMAGE_CONFIG_NAME[c],
      count: u[c],
      price_usd: formatUsd(prices[c]),
      unit: "per 1M tokens",
      cost_usd: microNanoUsd(BigInt(u[c]) * BigInt(prices[c])),
    }));
    return { table: "image tokens", lines, totalNano: imageTokenCost(p.tokens, u) };
  }
  if (row.images === null) return null;
  const line: CostLine = { class: "per_image", count: row.images, price_usd: formatUsd(p.perImage), unit: "per image", cost_usd: formatUsd(row.images * p.perImage) };
  return { table: "per image", lines: [line], totalNano: row.images * p.perImage };
}
