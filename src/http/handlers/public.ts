import type { Model } from "../../catalog/catalog.ts";
import type { ModelConfig } from "../../config/schema.ts";
import { modelNotFound } from "../../core/errors.ts";
import type { Services } from "../../services.ts";
import { json, pathParam, type OpenCall } from "../exchange.ts";
import { CONFIG_NAME, PRICE_CLASSES, type ModelPrices, type PriceSheet, type ServiceSheet } from "../../catalog/prices.ts";
import { nanoToUsd } from "../../core/money.ts";
import { isoTime } from "../../core/time.ts";
import { MINIMUM_TOP_UP_NANO } from "../../payments/topups.ts";
import type { PricedModel, PriceTable, Pricing } from "../api-schemas.ts";

// The four public endpoints: no key, read-only views of the catalog and health (their CORS is the
// endpoint table's).

const iso = (unix: number) => new Date(unix * 1000).toISOString();

/** One model in a shape both SDKs' models.list()/retrieve() accept (OpenAI Model + Anthropic ModelInfo). */
export function modelObject(m: Model) {
  return {
    id: m.id,
    object: "model",
    type: "model",
    created: m.created,
    created_at: iso(m.created),
    owned_by: m.ownedBy,
    display_name: m.displayName,
    modalities: m.modalities,
    endpoints: m.endpoints,
    aliases: m.aliases,
    max_tokens: m.endpoints.includes("messages") || m.endpoints.includes("chat.completions") ? m.maxOutputTokens : null,
    // Anthropic's model object names these; the catalog does not know them, and null is their "unknown".
    max_input_tokens: null,
    capabilities: null,
  };
}

export function listModels({ svc }: OpenCall): Response {
  const data = svc.catalog.models.map(modelObject);
  return json(
    { object: "list", data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null },
  );
}

export function getModel(c: OpenCall): Response {
  const id = pathParam(c, "id");
  const m = c.svc.catalog.lookup(id);
  if (!m) throw modelNotFound(id);
  return json(modelObject(m));
}

/**
 * The prices the first route bills (docs/pricing.md): every class, unset ones as its provider's rule
 * derives them; web_search per 1,000 searches; the long-context and service tiers when configured.
 */
function publicTable(p: ModelPrices): Pick<PricedModel, keyof PriceTable | "pricing_tiers" | "service_tiers"> {
  const out: ReturnType<typeof publicTable> = tableOf(p.standard);
  // Each service tier with its own long-context tiers, stacked as they are billed (catalog/prices.ts):
  // its base alone read as the price of its long prompts too, a sixth of fast mode's bill above 200k.
  const service = Object.entries(p.service).map(([name, s]) => [name, tableOf(s)]);
  if (service.length) out.service_tiers = Object.fromEntries(service);
  return out;
}

const usd = (s: PriceSheet) => Object.fromEntries(PRICE_CLASSES.map((c) => [CONFIG_NAME[c], nanoToUsd(s.prices[c])])) as PriceTable;

/** One service tier's table: its base prices, and its long-context tiers (lowest threshold first) when there are any. */
function tableOf(s: ServiceSheet): PriceTable & Pick<PricedModel, "pricing_tiers"> {
  const out: PriceTable & Pick<PricedModel, "pricing_tiers"> = usd(s.base);
  if (s.tiers.length) out.pricing_tiers = [...s.tiers].reverse().map((t) => ({ above_input_tokens: t.above, ...usd(t) }));
  return out;
}

/** An image model's public prices: per image, and its token prices when billed by the upstream's usage (docs/pricing.md#images). */
function imagePricing(p: ModelConfig["pricing"]): Pick<PricedModel, "per_image" | "unit" | "input" | "image_input" | "image_output" | "output"> {
  const perImage = { per_image: p.per_image ?? 0 };
  if (p.image_input === undefined && p.image_output === undefined) return perImage;
  return { ...perImage, unit: "per 1M tokens", input: p.input, image_input: p.image_input, image_output: p.image_output, ...(p.output === undefined ? {} : { output: p.output }) };
}

export function pricing({ svc }: OpenCall): Response {
  const models = svc.catalog.models.map((m): PricedModel => ({
    id: m.id,
    aliases: m.aliases,
    endpoints: m.endpoints,
    currency: "USD",
    ...(m.endpoints.some((e) => e.startsWith("images."))
      ? imagePricing(m.publicPricing)
      : {
          unit: "per 1M tokens" as const,
          ...publicTable(m.routes[0]!.prices),
        }),
  }));
  return json<Pricing>(
    {
      catalog_version: svc.catalog.version,
      currency: "USD",
      minimum_top_up_usd: nanoToUsd(MINIMUM_TOP_UP_NANO),
      // What a registration is credited on this gateway (none when only the operator makes accounts).
      starting_balance_usd: svc.config.dashboard.registration === "open" ? nanoToUsd(svc.config.dashboard.startingCreditNano) : 0,
      models,
    },
  );
}

/**
 * Each model's upstream routes, as the admin's status (`/api/admin/status`) shows them: the circuit,
 * the weight, and the provider's keys (by index and hash prefix, never the key), resting or not.
 */
export const routeHealth = (svc: Services) => {
  const now = svc.capacity.now();
  return svc.catalog.models.map((m) => ({
    id: m.id,
    routes: m.routes.map((r) => {
      const pool = svc.capacity.pool(r.provider.id);
      const wake = pool.wake(now);
      return { ...svc.health.view(r.key), weight: r.weight ?? null, resting_until: wake ? isoTime(wake) : null, keys: pool.views(now) };
    }),
  }));
};

type RouteState = { state: string; resting_until: string | null; keys: { state: string }[] };
const serving = (r: RouteState) => r.state !== "open" && r.resting_until === null;

/**
 * A model as a client sees it: ok, degraded (a route failing or a key resting, another still
 * serving) or unavailable (every route's breaker open or every key of it resting).
 */
function modelState(routes: RouteState[]): "ok" | "degraded" | "unavailable" {
  if (routes.every((r) => r.state === "healthy" && r.keys.every((k) => k.state === "ready"))) return "ok";
  return routes.some(serving) ? "degraded" : "unavailable";
}

/**
 * Public, with CORS `*`: what a client needs, the public model ids and their state. The routes
 * behind them (upstream model names) and the failures' texts (internal host names) are the
 * operator's: /api/admin/status and /metrics.
 */
export function status({ svc }: OpenCall): Response {
  const models = routeHealth(svc).map((m) => ({ id: m.id, state: modelState(m.routes) }));
  const paused = svc.settings.paused;
  const degraded = models.some((m) => m.state !== "ok");
  return json(
    {
      status: paused ? "paused" : degraded ? "degraded" : "ok",
      version: svc.version,
      catalog_version: svc.catalog.version,
      time: new Date().toISOString(),
      models,
    },
  );
}
