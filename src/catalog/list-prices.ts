import { calcPrice, findProvider, type ModelPrice, type Provider } from "@pydantic/genai-prices";
// Bundled by `bun build --compile` (its data is in its code): `gateway prices --check` never fetches
// prices at runtime (the package only would through updatePrices, never called here).
import type { ProviderKind } from "../config/schema.ts";
import type { PriceClass } from "./prices.ts";

// Providers' LIST prices from the maintained dataset bundled at build time (docs/pricing.md#checking-your-prices-against-the-list),
// in the gateway's price classes, to compare a route's sale prices with what its provider bills.

/** A class's list price in nano-dollars (per 1M tokens; web_search per 1,000): base, and tiers by prompt size. */
export interface ListClass {
  base: number;
  /** Applies to a request whose prompt (all input tokens, cached included) is above `above`; ascending. */
  tiers: { above: number; nano: number }[];
  /** The dataset's own key, or the class it falls back to when it lists none (billed as that class). */
  from: string;
}

export interface ListedModel {
  provider: { id: string; name: string };
  model: { id: string; name: string };
  /** Prompts never exceed it: list tiers starting at or above it are never reached. */
  contextWindow: number | null;
  prices: Partial<Record<PriceClass, ListClass>>;
  /** Price keys the dataset lists for this model that no gateway class bills (per-request fees, audio…). */
  unbilled: string[];
}

export type ListLookup =
  | { status: "listed"; listed: ListedModel }
  | { status: "unknown provider" }
  | { status: "not in the price list"; provider: { id: string; name: string }; why?: string };

/**
 * The dataset's provider for a route: by the dataset's API URL patterns first, so an OpenAI-compatible
 * base URL (OpenRouter, Groq, DeepSeek…) finds its own provider; an `anthropic` route that matches no
 * pattern (a proxy speaking Messages) is Anthropic. Anything else is unknown: never guessed from the model's name.
 */
export function listProvider(kind: ProviderKind, baseUrl: string | undefined): Provider | undefined {
  const byUrl = baseUrl ? findProvider({ providerApiUrl: baseUrl }) : undefined;
  if (byUrl) return byUrl;
  return kind === "anthropic" ? findProvider({ providerId: "anthropic" }) : undefined;
}

/** Our class ← the dataset's key; a class it does not list is billed as the one after `??` (the package's own fallback). */
const KEYS: [PriceClass, string[], PriceClass | null][] = [
  ["input", ["input_mtok"], null],
  // Reasoning is output to the gateway; a provider pricing it apart is covered only by the higher of the two.
  ["output", ["output_mtok", "output_reasoning_mtok"], null],
  ["cacheRead", ["cache_read_mtok"], "input"],
  ["cacheWrite", ["cache_write_mtok"], "input"],
  ["cacheWrite1h", ["cache_write_1h_mtok"], "cacheWrite"],
  ["webSearch", ["web_searches_kcount"], null],
];
const KNOWN_KEYS = new Set(KEYS.flatMap(([, keys]) => keys));
const APART = " (not listed apart)";

const toNano = (usd: number): number => Math.round(usd * 1e9);

/** One price key's value as a ListClass (a plain number, or the package's base and tiers). */
function listClass(value: ModelPrice[string], from: string): ListClass | undefined {
  if (value === undefined) return undefined;
  if (typeof value === "number") return { base: toNano(value), tiers: [], from };
  return { base: toNano(value.base), tiers: [...value.tiers].sort((a, b) => a.start - b.start).map((t) => ({ above: t.start, nano: toNano(t.price) })), from };
}

/** The higher of two list classes at every prompt size (output and reasoning; the day's time-of-day tables). */
function higher(a: ListClass | undefined, b: ListClass | undefined): ListClass | undefined {
  if (!a || !b) return a ?? b;
  const starts = [...new Set([...a.tiers, ...b.tiers].map((t) => t.above))].sort((x, y) => x - y);
  return {
    base: Math.max(a.base, b.base),
    tiers: starts.map((s) => ({ above: s, nano: Math.max(listAt(a, s + 1), listAt(b, s + 1)) })),
    from: listAt(b, 0) > listAt(a, 0) ? b.from : a.from,
  };
}

/** The list price of a prompt of `prompt` tokens: the highest tier it passes, as the package prices it. */
export function listAt(c: ListClass, prompt: number): number {
  let nano = c.base;
  for (const t of c.tiers) if (prompt > t.above) nano = t.nano;
  return nano;
}

/** One dataset price table in the gateway's classes. */
function classesOf(p: ModelPrice): Partial<Record<PriceClass, ListClass>> {
  const out: Partial<Record<PriceClass, ListClass>> = {};
  for (const [cls, keys, fallback] of KEYS) {
    let c: ListClass | undefined;
    for (const k of keys) c = higher(c, listClass(p[k], k));
    const parent = fallback ? out[fallback] : undefined;
    if (!c && parent) c = { ...parent, from: parent.from.endsWith(APART) ? parent.from : `${parent.from}${APART}` };
    if (c) out[cls] = c;
  }
  return out;
}

/**
 * The times of day at which the dataset's tables for `now`'s date can differ: now, and each
 * time-of-day window's start and end (DeepSeek's off-peak prices). The gateway sells at one price all
 * day, so the check takes the highest of them.
 */
function timesOfDay(prices: unknown, now: Date): Date[] {
  const out = [now];
  if (!Array.isArray(prices)) return out;
  for (const p of prices as { constraint?: { type?: string; start_time?: string; end_time?: string } }[]) {
    const c = p.constraint;
    if (c?.type !== "time_of_date") continue;
    for (const t of [c.start_time, c.end_time]) {
      const at = new Date(`${now.toISOString().slice(0, 10)}T${t}`);
      if (!Number.isNaN(at.getTime())) out.push(at);
    }
  }
  return out;
}

/** The list prices of `upstreamModel` at `provider` on `now`'s date (the package picks by date and time of day). */
export function lookupListPrices(provider: Provider | undefined, upstreamModel: string, now = new Date()): ListLookup {
  if (!provider) return { status: "unknown provider" };
  const at = (timestamp: Date) => calcPrice({}, upstreamModel, { provider, timestamp });
  let first: ReturnType<typeof calcPrice>;
  let tables: ModelPrice[];
  try {
    first = at(now);
    tables = first ? timesOfDay(first.model.prices, now).map((t) => at(t)!.model_price) : [];
  } catch (e) {
    // The package refuses an entry it finds inconsistent: that model has no usable list price, the others still do.
    return { status: "not in the price list", provider: { id: provider.id, name: provider.name }, why: (e as Error).message };
  }
  if (!first) return { status: "not in the price list", provider: { id: provider.id, name: provider.name } };
  const prices: Partial<Record<PriceClass, ListClass>> = {};
  for (const table of tables) {
    for (const [cls, c] of Object.entries(classesOf(table)) as [PriceClass, ListClass][]) prices[cls] = higher(prices[cls], c);
  }
  const unbilled = [...new Set(tables.flatMap((t) => Object.keys(t).filter((k) => !KNOWN_KEYS.has(k) && t[k] !== undefined)))].sort();
  return {
    status: "listed",
    listed: {
      provider: { id: first.provider.id, name: first.provider.name },
      model: { id: first.model.id, name: first.model.name ?? first.model.id },
      contextWindow: first.model.context_window ?? null,
      prices,
      unbilled,
    },
  };
}

/**
 * The highest list price a sale table covering prompts in (`above`, `upTo`] can meet: the list's price
 * at the smallest such prompt, and every list tier that starts inside the range below the model's
 * context window (a tier beyond it is never reached). `above`: the list tier it comes from, if any.
 */
export function listMaxIn(c: ListClass, above: number | null, upTo: number | null, contextWindow: number | null): { nano: number; above: number | null } {
  const low = above === null ? 0 : above + 1;
  const end = Math.min(upTo ?? Infinity, contextWindow ?? Infinity);
  let best = { nano: c.base, above: null as number | null };
  for (const t of c.tiers) if (t.above < low || (t.above < end && t.nano > best.nano)) best = { nano: t.nano, above: t.above };
  return best;
}
