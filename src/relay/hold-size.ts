import type { Model } from "../catalog/catalog.ts";
import { regional, serviceSheetOf, sheetFor, type ModelPrices, type ServiceSheet } from "../catalog/prices.ts";
import { tokenCost } from "../core/money.ts";
import type { JsonObject } from "../wire/shapes.ts";
import { mayHoldEscape } from "../wire/body-scan.ts";
import { isObject } from "../dialects/fields.ts";

// The hold covers the worst class a request can incur (docs/pricing.md, "The hold"): what it asks
// for decides which prices could apply, before any route has answered.

/** Searches held for a web search tool without max_uses (Anthropic sets no limit of its own). */
export const DEFAULT_SEARCH_HOLD = 10;

/** What in a request body can raise its price. */
export interface PriceAsks {
  /** The longest cache the body asks for: none, the 5-minute one, or 1 hour (`ttl: "1h"`). */
  cache: "none" | "5m" | "1h";
  /** Server-side searches the body allows (a web_search tool's max_uses, or DEFAULT_SEARCH_HOLD). */
  searches: number;
  /** The body may be answered at the priority tier: it asks for it, or for "auto" (the project's default may be priority), or names none (which means auto). */
  priority: boolean;
  /** The body asks for fast mode: Anthropic's `speed: "fast"`, or `service_tier: "fast"` (OpenRouter's name for it). */
  fast: boolean;
  /** The body pins inference to a region (Anthropic's inference_geo other than "global"). */
  region: boolean;
}

/** Whether a Messages or Chat body asks for fast mode, which the provider bills at a premium on every class. */
export const asksFast = (body: JsonObject): boolean => body.speed === "fast" || body.service_tier === "fast";

/** The longest cache asked anywhere in the body (system, messages, tools, nested tool results). */
function cacheAsked(v: unknown, depth = 0): "none" | "5m" | "1h" {
  if (depth > 64 || v === null || typeof v !== "object") return "none";
  let found: "none" | "5m" | "1h" = "none";
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const x = v[i];
      if (x === null || typeof x !== "object") continue;
      const c = cacheAsked(x, depth + 1);
      if (c === "1h") return c;
      if (c === "5m") found = c;
    }
    return found;
  }
  const o = v as JsonObject;
  for (const k in o) {
    const x = o[k];
    if (x === null || typeof x !== "object") continue;
    if (k === "cache_control") {
      if ((x as JsonObject).ttl === "1h") return "1h";
      found = "5m";
      continue;
    }
    const c = cacheAsked(x, depth + 1);
    if (c === "1h") return c;
    if (c === "5m") found = c;
  }
  return found;
}

// The needle as bytes, made once: a string needle is encoded again on every search, which cost
// more than the search itself (0.8 µs of the 1 µs a 350-byte body took).
const CACHE_CONTROL = Buffer.from("cache_control");
// Buffer's native search, on the body's own Uint8Array: no Buffer made around it per request.
const indexOf = Buffer.prototype.indexOf;

/**
 * Whether the body may ask for caching at all, from its bytes: the key as written, or an escape that
 * could spell it. Native and fast; most bodies skip the walk.
 */
function mayAskCache(raw: Uint8Array | undefined): boolean {
  if (!raw) return true;
  return indexOf.call(raw, CACHE_CONTROL) !== -1 || mayHoldEscape(raw);
}

function searchesAllowed(body: JsonObject): number {
  let n = 0;
  const tools = body.tools;
  // No `[]` stand-in for a body without tools: an array a request (bench/RESULTS.md).
  if (Array.isArray(tools)) {
    for (const t of tools) {
      if (!isObject(t) || typeof t.type !== "string" || !t.type.startsWith("web_search")) continue;
      const max = t.max_uses;
      n += typeof max === "number" && Number.isSafeInteger(max) && max > 0 ? max : DEFAULT_SEARCH_HOLD;
    }
  }
  // Chat's search models take web_search_options and bill each call.
  if (n === 0 && isObject(body.web_search_options)) n = 1;
  return n;
}

/**
 * What `body` asks for that can raise its price; `raw`: the client's bytes, when known (skips the walk
 * for most bodies). `cacheCounts` false: the prices it is held at charge no cache write above input,
 * so the cache asked is not looked for ("none").
 */
export function priceAsks(body: JsonObject, raw?: Uint8Array, cacheCounts = true): PriceAsks {
  const tier = body.service_tier;
  return {
    cache: cacheCounts && mayAskCache(raw) ? cacheAsked(body) : "none",
    searches: searchesAllowed(body),
    priority: tier === undefined || tier === null || tier === "auto" || tier === "priority",
    fast: asksFast(body),
    region: typeof body.inference_geo === "string" && body.inference_geo !== "global",
  };
}

/** The most the request can cost on routes of this table: its held input at the dearest input class it asked for, its output cap, its searches. */
function worstOn(p: ModelPrices, asks: PriceAsks, inputTokens: number, maxOut: number): number {
  const service = asks.fast && p.service.fast ? p.service.fast : asks.priority && p.service.priority ? p.service.priority : serviceSheetOf(p, undefined);
  // The prompt may be written to the cache whole: the tier is measured on it as the provider does.
  const sheetPrices = sheetFor(service, inputTokens).prices;
  const prices = asks.region && p.kind === "anthropic" ? regional(sheetPrices) : sheetPrices;
  const input = asks.cache === "1h" ? Math.max(prices.input, prices.cacheWrite1h, prices.cacheWrite) : asks.cache === "5m" ? Math.max(prices.input, prices.cacheWrite) : prices.input;
  // The table itself when the input price stands (no cache asked, or writes priced as input): no copy per request.
  return tokenCost(input === prices.input ? prices : { ...prices, input }, { input: inputTokens, output: maxOut, cacheRead: 0, cacheWrite: 0, webSearches: asks.searches });
}

/**
 * Whether the gateway may put cache breakpoints of its own on this request: a Chat body (Responses
 * arrives as one) on a model with a route whose prompt_cache is "auto" (only Messages routes take it,
 * and a Chat body is always translated for them). Then the whole prompt may be a 5-minute cache write.
 */
export function gatewayMayCache(model: Model, clientDialect: "chat" | "messages"): boolean {
  if (clientDialect !== "chat") return false;
  // A loop: `some` with an arrow made a function on every chat request.
  for (const r of model.routes) if (r.capabilities.promptCache === "auto") return true;
  return false;
}

/**
 * The request's hold in nano-dollars: the worst of its model's price tables (a fallback may answer on
 * another kind of provider), each at the worst class the body asks for, or at least the 5-minute
 * cache write when the gateway may ask for it (`gatewayCaches`).
 */
export function holdNano(model: Model, body: JsonObject, raw: Uint8Array | undefined, inputTokens: number, maxOut: number, gatewayCaches = false): number {
  // On a model whose cache writes cost no more than its input (an OpenAI-kind table), no cache asked
  // can raise the hold: the body is not searched (two scans of an agent's 100 KB turn, bench/RESULTS.md).
  const asks = priceAsks(body, raw, cacheRaises(model));
  if (gatewayCaches && asks.cache === "none") asks.cache = "5m";
  let worst = 0;
  for (const p of model.priceTables) worst = Math.max(worst, worstOn(p, asks, inputTokens, maxOut));
  return worst;
}

const raising = new WeakMap<Model, boolean>();

/** Whether a cache write is dearer than input in any sheet of any of `model`'s tables (worstOn's max then can rise); once per model. */
function cacheRaises(model: Model): boolean {
  let r = raising.get(model);
  if (r === undefined) {
    const dearer = (s: ServiceSheet) => [s.base, ...s.tiers].some(({ prices: p }) => p.cacheWrite > p.input || p.cacheWrite1h > p.input);
    r = model.priceTables.some((p) => dearer(p.standard) || Object.values(p.service).some((s) => s !== undefined && dearer(s)));
    raising.set(model, r);
  }
  return r;
}

/**
 * The least any request of `model` with this output cap can be held: its output cap at the cheapest
 * table's base prices. Checked before costly work (a translation), it refuses nothing the real hold
 * would admit.
 */
export function outputFloorNano(model: Model, maxOut: number): number {
  let least = Infinity;
  for (const p of model.priceTables) {
    const prices = sheetFor(serviceSheetOf(p, undefined), 0).prices;
    least = Math.min(least, tokenCost(prices, { input: 0, output: maxOut, cacheRead: 0, cacheWrite: 0 }));
  }
  return Number.isFinite(least) ? least : 0;
}
