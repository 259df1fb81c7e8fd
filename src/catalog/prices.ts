import type { ModelConfig, ProviderKind, TierPrices } from "../config/schema.ts";
import { promptTokens, tokenCost, usdToNano, type TokenPrices, type TokenUsage } from "../core/money.ts";

// A model's effective prices on one kind of provider (docs/pricing.md): every class priced, each with
// where its price came from, for the base table, its long-context tiers and its service tiers. Prices
// depend on the provider kind because an unset class follows the provider's own rule.

export type PriceClass = "input" | "output" | "cacheRead" | "cacheWrite" | "cacheWrite1h" | "webSearch";
export const PRICE_CLASSES: readonly PriceClass[] = ["input", "output", "cacheRead", "cacheWrite", "cacheWrite1h", "webSearch"];
/** Each class under its config name. */
export const CONFIG_NAME: Record<PriceClass, keyof TierPrices> = {
  input: "input",
  output: "output",
  cacheRead: "cache_read",
  cacheWrite: "cache_write",
  cacheWrite1h: "cache_write_1h",
  webSearch: "web_search",
};

/**
 * configured: the config sets it; derived: a provider's published rule (`rule` names it); input: unset
 * and billed at the input price; base: a tier's unset class, at the base table's configured price.
 */
export interface PriceSource {
  source: "configured" | "derived" | "input" | "base";
  rule?: string;
}

export interface PriceSheet {
  prices: Required<TokenPrices>;
  sources: Record<PriceClass, PriceSource>;
}
export interface TierSheet extends PriceSheet {
  /** The tier's prices apply to a request whose prompt (input + cache read + cache write tokens) is above this. */
  above: number;
}
/** One service tier's table: its base and its long-context tiers, highest threshold first. */
export interface ServiceSheet {
  base: PriceSheet;
  tiers: TierSheet[];
}
export const SERVICE_TIERS = ["flex", "priority", "fast"] as const;
export type ServiceTier = (typeof SERVICE_TIERS)[number];

export interface ModelPrices {
  kind: ProviderKind;
  standard: ServiceSheet;
  service: Partial<Record<ServiceTier, ServiceSheet>>;
}

const WEB_SEARCH_NANO = usdToNano(10);

/** An unset class's price from the input price on this kind of provider: never under the provider's own rule. */
function derive(kind: ProviderKind, cls: PriceClass, input: number): { nano: number; from: PriceSource } {
  if (kind === "anthropic") {
    // Anthropic's published multipliers of the input price; rounded up, never under.
    switch (cls) {
      case "cacheRead":
        return { nano: Math.ceil(input / 10), from: { source: "derived", rule: "anthropic: 0.1 x input" } };
      case "cacheWrite":
        return { nano: Math.ceil((input * 5) / 4), from: { source: "derived", rule: "anthropic: 1.25 x input" } };
      case "cacheWrite1h":
        return { nano: input * 2, from: { source: "derived", rule: "anthropic: 2 x input" } };
      default:
        return { nano: WEB_SEARCH_NANO, from: { source: "derived", rule: "anthropic: 10 USD per 1,000 searches" } };
    }
  }
  // A search is never free: 10 USD per 1,000 is what Anthropic and OpenAI both bill for theirs.
  if (cls === "webSearch") return { nano: WEB_SEARCH_NANO, from: { source: "derived", rule: "default: 10 USD per 1,000 searches" } };
  return { nano: input, from: { source: "input" } };
}

/**
 * One table: the classes `cfg` sets, the rest from `parent` (a tier over its base) when the parent
 * configured them, else derived from this table's own input price (so a tier that doubles input
 * doubles the classes that follow input).
 */
function sheet(cfg: TierPrices, kind: ProviderKind, parent?: PriceSheet): PriceSheet {
  const prices = {} as Required<TokenPrices>;
  const sources = {} as Record<PriceClass, PriceSource>;
  for (const cls of PRICE_CLASSES) {
    const set = cfg[CONFIG_NAME[cls]];
    if (set !== undefined) {
      prices[cls] = usdToNano(set);
      sources[cls] = { source: "configured" };
    } else if (parent && (cls === "input" || cls === "output" || parent.sources[cls].source === "configured" || parent.sources[cls].source === "base")) {
      prices[cls] = parent.prices[cls];
      sources[cls] = { source: "base" };
    } else if (cls === "input" || cls === "output") {
      // Text models are checked to have both (config/load.ts); an image model's table is never used for text.
      prices[cls] = 0;
      sources[cls] = { source: "configured" };
    } else {
      const d = derive(kind, cls, prices.input);
      prices[cls] = d.nano;
      sources[cls] = d.from;
    }
  }
  return { prices, sources };
}

function serviceSheet(m: ModelConfig, base: PriceSheet, kind: ProviderKind): ServiceSheet {
  const tiers = (m.pricing_tiers ?? [])
    .map((t): TierSheet => ({ ...sheet(t, kind, base), above: t.above_input_tokens }))
    .sort((a, b) => b.above - a.above);
  return { base, tiers };
}

/** ⌈a × b / c⌉ exactly: two prices in nano-dollars per 1M multiply past 2^53. */
const scaled = (a: number, b: number, c: number): number => {
  const p = BigInt(a) * BigInt(b);
  const q = BigInt(c);
  return Number((p + q - 1n) / q);
};

/**
 * A long-context tier over a service tier's table (docs/pricing.md#service-and-long-context-tiers):
 * each class at the service tier's price times the long-context tier's multiple of the base price,
 * rounded up. The providers stack the two: Anthropic bills fast mode above 200k at 6x the
 * long-context prices (Opus 4.6: 60 / 225 USD), OpenAI bills flex above 272k at 2x input and 1.5x
 * output of flex. Taking the long-context tier's own prices instead sold fast mode's long prompts
 * at a sixth of the bill and flex's at twice it. A class the base gives away keeps the tier's price.
 */
function stacked(service: PriceSheet, tier: TierSheet, base: PriceSheet, name: ServiceTier): TierSheet {
  const prices = {} as Required<TokenPrices>;
  const sources = {} as Record<PriceClass, PriceSource>;
  for (const cls of PRICE_CLASSES) {
    const b = base.prices[cls];
    const t = tier.prices[cls];
    prices[cls] = b === 0 ? t : t === b ? service.prices[cls] : scaled(service.prices[cls], t, b);
    sources[cls] = b === 0 ? tier.sources[cls] : t === b ? service.sources[cls] : { source: "derived", rule: `${name} x the above-${tier.above} tier's multiple of base` };
  }
  return { prices, sources, above: tier.above };
}

/** The model's effective prices on routes of this provider kind. */
export function modelPrices(m: ModelConfig, kind: ProviderKind): ModelPrices {
  const base = sheet(m.pricing, kind);
  const standard = serviceSheet(m, base, kind);
  const service: ModelPrices["service"] = {};
  for (const name of SERVICE_TIERS) {
    const cfg = m.service_tiers?.[name];
    if (!cfg) continue;
    const own = sheet(cfg, kind, base);
    service[name] = { base: own, tiers: standard.tiers.map((t) => stacked(own, t, base, name)) };
  }
  return { kind, standard, service };
}

/** The service tier's table the answer reports (absent or another tier: base prices). */
export function serviceSheetOf(p: ModelPrices, tier: string | undefined): ServiceSheet {
  return (tier === "flex" || tier === "priority" || tier === "fast" ? p.service[tier] : undefined) ?? p.standard;
}

/** The table a prompt of this size is billed at: the highest tier it passes, else the base. */
export function sheetFor(s: ServiceSheet, prompt: number): PriceSheet {
  for (const t of s.tiers) if (prompt > t.above) return t;
  return s.base;
}

/** The prices a usage is billed at: its service tier's table, at its prompt's tier, in its region. */
export function pricesFor(p: ModelPrices, u: TokenUsage): Required<TokenPrices> {
  const prices = sheetFor(serviceSheetOf(p, u.serviceTier), promptTokens(u)).prices;
  return u.inferenceGeo && p.kind === "anthropic" ? regional(prices) : prices;
}

/** Anthropic's premium for inference pinned to a region (inference_geo "us"): every token class, not searches. */
export const REGIONAL_RULE = "anthropic: 1.1 x every token price";
const TOKEN_CLASSES = ["input", "output", "cacheRead", "cacheWrite", "cacheWrite1h"] as const;
const regionalTables = new WeakMap<Required<TokenPrices>, Required<TokenPrices>>();

/** A table at 1.1x each token price, rounded up to the nano-dollar per 1M as derived prices are; made once per table. */
export function regional(prices: Required<TokenPrices>): Required<TokenPrices> {
  let r = regionalTables.get(prices);
  if (!r) {
    r = { ...prices };
    for (const c of TOKEN_CLASSES) r[c] = Math.ceil((prices[c] * 11) / 10);
    regionalTables.set(prices, r);
  }
  return r;
}

/** What a usage costs in nano-dollars on routes of this price table. */
export const priceUsage = (p: ModelPrices, u: TokenUsage): number => tokenCost(pricesFor(p, u), u);

/** The classes the base table did not configure, by rule, for the line `gateway serve` prints. */
export function derivedClasses(p: ModelPrices): string[] {
  const out: string[] = [];
  for (const cls of PRICE_CLASSES) {
    const s = p.standard.base.sources[cls];
    if (s.source === "derived") out.push(`${CONFIG_NAME[cls]} (${s.rule})`);
    else if (s.source === "input") out.push(`${CONFIG_NAME[cls]} (input price)`);
  }
  return out;
}
