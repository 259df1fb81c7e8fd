import { tokenCost, usdToNano, type TokenPrices, type TokenUsage } from "../../src/core/money.ts";

// The price table most tests sell at, once: as a config writes it and as the gateway computes with it.

/** $3 / $15 / $0.30 / $3.75 per million tokens, as a config's [models.pricing] writes it: USD per million. */
export const PRICES = { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 };

/**
 * A config's text model sold on both text endpoints at `prices` (its `pricing`, and `pricing_tiers`
 * or `service_tiers` when given), through one route to `provider` (its model `<id>-upstream`).
 */
export const pricedModel = (id: string, provider: string, prices: object) => ({
  id,
  modalities: ["text"],
  endpoints: ["messages", "chat.completions"],
  ...prices,
  routes: [{ provider, model: `${id}-upstream` }],
});

/** A config's text model sold at these prices on both text endpoints, through one route to `provider`. */
export const textModel = (id: string, provider: string) => pricedModel(id, provider, { pricing: PRICES });

/** The same table in nano-dollars per million tokens, as the translators and the ledger take it. */
export const PRICES_NANO: TokenPrices = {
  input: usdToNano(PRICES.input),
  output: usdToNano(PRICES.output),
  cacheRead: usdToNano(PRICES.cache_read),
  cacheWrite: usdToNano(PRICES.cache_write),
};

/** The gateway's own cost function at these prices, for the stream machines under test. */
export const costOf = (u: TokenUsage): number => tokenCost(PRICES_NANO, u);

/** Hand-computed cost in nano-dollars, the oracle for what was charged: nano per million × tokens, rounded up. */
export function expectedNano(u: { input: number; output: number; cacheRead?: number; cacheWrite?: number }): number {
  const p = PRICES_NANO;
  return Math.ceil((u.input * p.input + u.output * p.output + (u.cacheRead ?? 0) * p.cacheRead + (u.cacheWrite ?? 0) * p.cacheWrite) / 1e6);
}

/** Nano-dollars from a cost_usd as shown on the wire (at most 9 decimals). */
export const usdToNanoShown = (usd: number): number => Math.round(usd * 1e9);

/** The last usage.cost_usd of an SSE body (the final usage event), or null. */
export function lastStreamCost(text: string): number | null {
  const all = [...text.matchAll(/"cost_usd":\s*(-?[0-9.eE+-]+)/g)];
  return all.length ? Number(all.at(-1)![1]) : null;
}
