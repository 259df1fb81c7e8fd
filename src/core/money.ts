// Money is integer nano-dollars (1 USD = 1e9) everywhere; floats appear only when reading the
// config file and when rendering cost_usd at the edge.

export const NANO_PER_USD = 1_000_000_000;

/**
 * Exact conversion of a decimal USD amount (as written in TOML, a JSON body or on a command line) to
 * nano-dollars. An amount finer than the ledger's unit (1 nano-dollar, 9 decimals) is refused, never
 * rounded: 0.1 + 0.2 arrives as 0.30000000000000004, and crediting 0.3 would not be what was sent.
 */
export function usdToNano(usd: number | string): number {
  const text = typeof usd === "number" ? numberToPlainString(usd) : usd.trim();
  const m = /^(\d+)(?:\.(\d*))?$/.exec(text);
  if (!m) throw new RangeError(`not a USD amount (a number of at least 0 with at most 9 decimals): ${text}`);
  const decimals = (m[2] ?? "").replace(/0+$/, "");
  if (decimals.length > 9) {
    throw new RangeError(`${text} has ${decimals.length} decimals, finer than the ledger's unit of 1 nano-dollar (0.000000001 USD): at most 9 decimals`);
  }
  const nano = Number(m[1]) * NANO_PER_USD + Number(decimals.padEnd(9, "0"));
  if (!Number.isSafeInteger(nano)) throw new RangeError(`USD amount too large: ${text}`);
  return nano;
}

/**
 * The decimal a number stands for as JavaScript prints it: the shortest text that reads back as the
 * same number (0.1 is "0.1", 0.1 + 0.2 is "0.30000000000000004"), with an exponent form written out
 * (1e-7 is "0.0000001", 1.5e-10 is "0.00000000015"), so its decimals can be counted.
 */
function numberToPlainString(n: number): string {
  if (!Number.isFinite(n) || n < 0) throw new RangeError(`not a USD amount (a number of at least 0 with at most 9 decimals): ${n}`);
  const s = String(n);
  const e = /^(\d+)(?:\.(\d+))?e([+-]\d+)$/.exec(s);
  if (!e) return s;
  const digits = e[1]! + (e[2] ?? "");
  const exponent = Number(e[3]) - (e[2]?.length ?? 0);
  if (exponent >= 0) return digits + "0".repeat(exponent);
  const padded = digits.padStart(1 - exponent, "0");
  return `${padded.slice(0, exponent)}.${padded.slice(exponent)}`;
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
  /** The region Anthropic's answer says inference was pinned to (usage.inference_geo), when not "global". */
  inferenceGeo?: string;
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
