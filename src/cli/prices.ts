import { buildCatalog, type Catalog, type Model } from "../catalog/catalog.ts";
import {
  CONFIG_NAME, derivedClasses, PRICE_CLASSES, pricesFor, REGIONAL_RULE, serviceSheetOf, sheetFor,
  type ModelPrices, type PriceClass, type PriceSheet, type PriceSource,
} from "../catalog/prices.ts";
import { formatUsd, promptTokens, tokenCost, type TokenUsage } from "../core/money.ts";
import { parse } from "./args.ts";
import { loadInstallation } from "./context.ts";
import { microNanoUsd, table, type CostLine } from "./format.ts";
import { imageModels, imagePriceRows } from "./image-prices.ts";
import { LIST_DATASET } from "../catalog/list-dataset.ts";

export const PRICES_USAGE = `Usage:
  gateway prices [--json] [--check]

The effective price table of every text model, per kind of provider its routes use: each class in
USD per 1M tokens (web_search: per 1,000 searches) with its source: configured, derived by a
provider's rule (named), input (unset, billed at the input price) or base (a tier's unset class, at
the base price). Long-context tiers and service tiers follow their base table; a long-context tier
stacks on each service tier (docs/pricing.md#service-and-long-context-tiers).
Image models: input (prompt), image_input (edit sources) and image_output tokens per 1M when priced
by tokens, and per_image (the bill when the upstream reports no usage, or the only price).

--check compares every route's sale prices with its provider's list prices from the price dataset
bundled at build time (${LIST_DATASET.name} ${LIST_DATASET.version}; no network): a table per model
route with each class's sale price, list price and margin, each class sold below cost flagged.
Exit status: 0 when no price is below the list, 1 when any is, 2 on a usage or config error.
Neither form needs the providers' API keys set: their \${ENV} variables may stay unset.`;

/** Each class's unit, as the tables print it. */
const UNIT: Record<PriceClass, string> = {
  input: "per 1M tokens",
  output: "per 1M tokens",
  cacheRead: "per 1M tokens",
  cacheWrite: "per 1M tokens",
  cacheWrite1h: "per 1M tokens",
  webSearch: "per 1,000 searches",
};

const sourceText = (s: PriceSource): string => (s.rule ? `${s.source} (${s.rule})` : s.source);

/** Every table of a model on one provider kind: base, its tiers, then each service tier and its tiers. */
function tablesOf(p: ModelPrices): { name: string; serviceTier: string | null; above: number | null; sheet: PriceSheet }[] {
  const out: { name: string; serviceTier: string | null; above: number | null; sheet: PriceSheet }[] = [];
  const services: [string | null, ModelPrices["standard"]][] = [[null, p.standard], ...Object.entries(p.service)];
  for (const [tier, s] of services) {
    out.push({ name: tier ?? "base", serviceTier: tier, above: null, sheet: s!.base });
    for (const t of [...s!.tiers].reverse()) out.push({ name: `${tier ? `${tier}, ` : ""}above ${t.above} input tokens`, serviceTier: tier, above: t.above, sheet: t });
  }
  return out;
}

const textModels = (c: Catalog): Model[] => c.models.filter((m) => m.endpoints.some((e) => e === "messages" || e === "chat.completions"));

/** Exit status: with --check, 1 when a price is below the provider's list price. */
export async function pricesCommand(argv: string[]): Promise<number> {
  const { values } = parse(argv, { check: { type: "boolean" } });
  // Reads prices only, never calls a provider: its API keys' variables need not be set.
  const config = loadInstallation(values);
  const catalog = buildCatalog(config);
  if (values.check) {
    // Loaded here, not with the CLI: the dataset costs every other command (serve, healthcheck) ~80 ms.
    // A literal specifier, so `bun build --compile` still bundles it.
    const { checkPrices, formatCheck } = await import("./prices-check.ts");
    const report = checkPrices(catalog);
    console.log(values.json ? JSON.stringify(report, null, 2) : formatCheck(report));
    return report.below_cost ? 1 : 0;
  }
  const data = textModels(catalog).map((m) => ({
    model: m.id,
    routes: m.priceTables.map((p) => ({
      provider_kind: p.kind,
      tables: tablesOf(p).map((t) => ({
        table: t.name,
        service_tier: t.serviceTier,
        above_input_tokens: t.above,
        prices: Object.fromEntries(
          PRICE_CLASSES.map((c) => [CONFIG_NAME[c], { usd: Number(formatUsd(t.sheet.prices[c])), unit: UNIT[c], ...t.sheet.sources[c] }]),
        ),
      })),
    })),
  }));
  const images = imageModels(catalog).map((m) => ({
    model: m.id,
    billed_by: m.imagePrices.tokens ? "image tokens" : "per image",
    prices: Object.fromEntries(imagePriceRows(m).map(([cls, price, unit, source]) => [cls, { usd: Number(price), unit, source }])),
  }));
  if (values.json) {
    console.log(JSON.stringify([...data, ...images], null, 2));
    return 0;
  }
  const header = ["model", "provider_kind", "table", "class", "usd", "unit", "source"];
  const rows: (string | number)[][] = [];
  for (const m of textModels(catalog)) {
    for (const p of m.priceTables) {
      for (const t of tablesOf(p)) {
        for (const c of PRICE_CLASSES) rows.push([m.id, p.kind, t.name, CONFIG_NAME[c], formatUsd(t.sheet.prices[c]), UNIT[c], sourceText(t.sheet.sources[c])]);
      }
    }
  }
  for (const m of imageModels(catalog)) for (const [cls, price, unit, source] of imagePriceRows(m)) rows.push([m.id, "any", "image", cls, price, unit, source]);
  console.log(rows.length ? table(header, rows) : "no models in the catalog");
  return 0;
}

/** `gateway serve`'s line per model and provider kind whose unset prices it derived (the demo provider bills nothing). */
export function derivedPriceLines(catalog: Catalog): string[] {
  const lines: string[] = [];
  for (const m of textModels(catalog)) {
    for (const p of m.priceTables) {
      const derived = p.kind === "demo" ? [] : derivedClasses(p);
      if (derived.length) lines.push(`gateway: prices of ${m.id} on ${p.kind} routes: ${derived.join(", ")} (gateway prices)`);
    }
  }
  return lines;
}

/**
 * A logged usage's cost line by line at the prices of `p` (the model's table for the provider kind
 * that answered): the table it falls in (its service tier, its prompt's tier), then each class.
 * `total_nano` is the sum rounded up once, as the ledger charges it.
 */
export function costLines(p: ModelPrices, u: TokenUsage): { table: string; lines: CostLine[]; totalNano: number } {
  const service = serviceSheetOf(p, u.serviceTier);
  const sheet = sheetFor(service, promptTokens(u));
  const serviceName = service === p.standard ? "base" : u.serviceTier!;
  const tiered = "above" in sheet ? `${serviceName}, above ${(sheet as { above: number }).above} input tokens` : serviceName;
  // The region's premium, as pricesFor applies it.
  const prices = pricesFor(p, u);
  const table = prices === sheet.prices ? tiered : `${tiered}, inference_geo ${u.inferenceGeo} (${REGIONAL_RULE})`;
  const counts: Record<PriceClass, number> = {
    input: u.input,
    output: u.output,
    cacheRead: u.cacheRead,
    cacheWrite: u.cacheWrite,
    cacheWrite1h: u.cacheWrite1h ?? 0,
    webSearch: u.webSearches ?? 0,
  };
  const lines = PRICE_CLASSES.filter((c) => counts[c] > 0 || c === "input" || c === "output").map((c): CostLine => {
    // Per million tokens; a search is per thousand, so × 1,000 puts it on the same scale (money.ts).
    const micro = BigInt(counts[c]) * BigInt(prices[c]) * (c === "webSearch" ? 1000n : 1n);
    return { class: CONFIG_NAME[c], count: counts[c], price_usd: formatUsd(prices[c]), unit: UNIT[c], cost_usd: microNanoUsd(micro) };
  });
  return { table, lines, totalNano: tokenCost(prices, u) };
}
