// Money is integer nano-dollars (1 USD = 1e9) everywhere; floats appear only when reading the
// config file and when rendering cost_usd at the edge.

export const NANO_PER_USD = 1_000_000_000;

/** Exact conversion of a decimal USD amount (as written in TOML or on a command line) to nano-dollars. */
export function usdToNano(usd: number | string): number {
  const text = typeof usd === "number" ? numberToPlainString(usd) : usd.trim();
  const m = /^(\d+)(?:\.(\d{0,9})(\d*))?$/.exec(text);
  if (!m || (m[3] && /[1-9]/.test(m[3]))) throw new RangeError(`not a USD amount with at most 9 decimals: ${text}`);
  const nano = Number(m[1]) * NANO_PER_USD + Number((m[2] ?? "").padEnd(9, "0"));
  if (!Number.isSafeInteger(nano)) throw new RangeError(`USD amount too large: ${text}`);
  return nano;
}

function numberToPlainString(n: number): string {
  if (!Number.isFinite(n) || n < 0) throw new RangeError(`not a USD amount: ${n}`);
  // toFixed(9) would round 0.1 + float noise correctly but turns 1e21 into exponent form; amounts are far smaller.
  const fixed = n.toFixed(12).replace(/0+$/, "").replace(/\.$/, "");
  return fixed;
}

/** cost_usd as clients see it: the nano amount as a JSON number with at most 9 decimals. */
export function nanoToUsd(nano: number): number {
  return nano / NANO_PER_USD;
}

export function formatUsd(nano: number): string {
  const sign = nano < 0 ? "-" : "";
  // Past 2^53 a number has no exact nano digits left (an estimate for max_tokens: 1e300): the whole
  // dollars of its exact value, by BigInt, rather than float remainders that print as garbage.
  if (!Number.isSafeInteger(nano)) return Number.isFinite(nano) ? `${sign}${BigInt(Math.trunc(Math.abs(nano))) / BigInt(NANO_PER_USD)}` : `${sign}∞`;
  const abs = Math.abs(nano);
  const whole = Math.floor(abs / NANO_PER_USD);
  const frac = String(abs % NANO_PER_USD).padStart(9, "0").replace(/0+$/, "");
  return `${sign}${whole}${frac ? "." + frac : ""}`;
}

/**
 * Prices of a text model, in nano-dollars per 1M tokens (so $0.075/M stays an integer); web searches
 * in nano-dollars per 1,000 searches. The catalog fills every class (docs/pricing.md, unset prices);
 * the optional ones default for tables written by hand: 1-hour writes at the cache-write price.
 */
export interface TokenPrices {
  input: number;
  output: number;
  cacheRead: number;
  /** 5-minute cache writes, or a provider's one cache-write rate. */
  cacheWrite: number;
  cacheWrite1h?: number;
  webSearch?: number;
}

export interface TokenUsage {
  /** Uncached input tokens. */
  input: number;
  /** Output tokens, reasoning included (however the provider reported it). */
  output: number;
  cacheRead: number;
  /** Tokens written to a 5-minute cache (or a provider's one cache-write count): excludes cacheWrite1h. */
  cacheWrite: number;
  /** Tokens written to a 1-hour cache (Anthropic's cache_creation.ephemeral_1h_input_tokens). */
  cacheWrite1h?: number;
  /** Server-side web searches (server_tool_use.web_search_requests). */
  webSearches?: number;
  /** The service tier the upstream's answer reports (OpenAI's service_tier), when it reports one. */
  serviceTier?: string;
}

/** Every cache write of a usage, whatever its duration. */
export const cacheWrites = (u: TokenUsage): number => u.cacheWrite + (u.cacheWrite1h ?? 0);

/** The prompt a provider's long-context tier is measured on: input, cache reads and cache writes. */
export const promptTokens = (u: TokenUsage): number => u.input + u.cacheRead + cacheWrites(u);

const MILLION = 1_000_000n;
const EXACT = 2 ** 51;

/**
 * Sum of every class at its own rate, rounded up once to a whole nano-dollar. A search is priced per
 * thousand: × 1,000 puts it on the same per-million scale, so one rounding covers every class.
 * BigInt because tokens × nano-per-million passes 2^53 for long contexts.
 */
export function tokenCost(prices: TokenPrices, usage: TokenUsage): number {
  const w1h = usage.cacheWrite1h ?? 0;
  const searches = usage.webSearches ?? 0;
  const p1h = prices.cacheWrite1h ?? prices.cacheWrite;
  const pSearch = (prices.webSearch ?? 0) * 1000;
  // Every request pays this twice (reserve, settle); while each product stays below 2^51 (and so
  // their sum below 2^53: six terms under 2^51 stay under 2^54, checked below) plain numbers are exact,
  // which covers any realistic request.
  const a = usage.input * prices.input;
  const b = usage.output * prices.output;
  const c = usage.cacheRead * prices.cacheRead;
  const d = usage.cacheWrite * prices.cacheWrite;
  const e = w1h * p1h;
  const f = searches * pSearch;
  const sum = a + b + c + d + e + f;
  if (a < EXACT && b < EXACT && c < EXACT && d < EXACT && e < EXACT && f < EXACT && sum < 2 ** 53 && sum >= 0 && Number.isInteger(sum)) {
    const whole = sum - (sum % 1_000_000);
    return whole / 1_000_000 + (sum === whole ? 0 : 1);
  }
  const micro =
    BigInt(usage.input) * BigInt(prices.input) +
    BigInt(usage.output) * BigInt(prices.output) +
    BigInt(usage.cacheRead) * BigInt(prices.cacheRead) +
    BigInt(usage.cacheWrite) * BigInt(prices.cacheWrite) +
    BigInt(w1h) * BigInt(p1h) +
    BigInt(searches) * BigInt(pSearch);
  return Number((micro + MILLION - 1n) / MILLION);
}
