import { createHash } from "node:crypto";
import type { Config } from "../config/load.ts";
import { DEFAULT_CAPABILITIES } from "../config/defaults.ts";
import type { Capabilities, Endpoint, ModelConfig, ProviderConfig, RouteConfig } from "../config/schema.ts";
import { imagePricesOf, type ImagePrices } from "./image-prices.ts";
import { modelPrices, type ModelPrices } from "./prices.ts";
import { isAliasPattern } from "../config/aliases.ts";

export interface Route {
  /** Stable name for health and logs: "<provider>/<upstream model>". */
  key: string;
  provider: ProviderConfig;
  upstreamModel: string;
  /** The provider's capabilities overridden by the route's, over the defaults: what the translators read. */
  capabilities: RouteCapabilities;
  /** The model's effective prices on this route's kind of provider (unset classes follow its rules). */
  prices: ModelPrices;
  /** Its share of the model's traffic among the weighted routes; undefined: a fallback, tried in order after them. */
  weight?: number;
}

/** Capabilities resolved for one route, in the translators' names (ChatUpstreamCaps, MessagesUpstreamCaps). */
export interface RouteCapabilities {
  reasoning: boolean;
  reasoningContent: boolean;
  topK: boolean;
  thinking: "budget" | "adaptive" | "none";
  structuredOutputs: boolean;
  fixedSampling: boolean;
  promptCache: "auto" | "off";
}

export interface Model {
  id: string;
  aliases: string[];
  displayName: string;
  ownedBy: string;
  created: number;
  modalities: string[];
  endpoints: Endpoint[];
  /** The effective price table per provider kind of its routes (docs/pricing.md), one per kind. */
  priceTables: ModelPrices[];
  /** An image model's prices: per image, and per image token when token-priced (docs/pricing.md#images). */
  imagePrices: ImagePrices;
  maxOutputTokens: number;
  routes: Route[];
  /** Some route carries a weight: the route loop asks relay/capacity.ts for this request's order. */
  weighted: boolean;
  /** Public USD prices as configured, for /api/pricing. */
  publicPricing: ModelConfig["pricing"];
}

export interface Catalog {
  version: string;
  models: Model[];
  /**
   * Canonical id and aliases → model; on a miss, the alias patterns (a trailing `*`: a prefix, so
   * `claude-sonnet-4-5-*` takes the dated ids a client asks for). Exact names win; the config refuses
   * patterns that overlap or that match another model's exact name, so at most one pattern matches.
   */
  lookup(name: string): Model | undefined;
  /**
   * Some model could be held at nothing (a text model whose input and output are free on a route,
   * an image model free per image and per token): only then may an account with nothing to spend
   * still pass a paid endpoint's hold.
   */
  hasFreeModel: boolean;
}

function isFree(m: Model): boolean {
  const text = m.endpoints.includes("messages") || m.endpoints.includes("chat.completions");
  const images = m.endpoints.includes("images.generations") || m.endpoints.includes("images.edits");
  const tokens = m.imagePrices.tokens;
  return (
    (text && m.priceTables.some((p) => p.standard.base.prices.input === 0 && p.standard.base.prices.output === 0)) ||
    (images && m.imagePrices.perImage === 0 && (tokens === null || Object.values(tokens).every((v) => v === 0)))
  );
}

function route(r: RouteConfig, provider: ProviderConfig, prices: ModelPrices): Route {
  const c: Required<Capabilities> = { ...DEFAULT_CAPABILITIES, ...provider.capabilities, ...r.capabilities };
  return {
    key: `${r.provider}/${r.model}`,
    provider,
    weight: r.weight,
    upstreamModel: r.model,
    capabilities: {
      reasoning: c.reasoning,
      reasoningContent: c.reasoning_content,
      topK: c.top_k,
      thinking: c.thinking,
      structuredOutputs: c.structured_outputs,
      fixedSampling: c.fixed_sampling,
      promptCache: c.prompt_cache,
    },
    prices,
  };
}

// A fixed date so `created` is stable across restarts when the config names none.
const DEFAULT_CREATED = 1_767_225_600; // 2026-01-01T00:00:00Z

export function buildCatalog(cfg: Config): Catalog {
  const providers = new Map(cfg.providers.map((p) => [p.id, p]));
  const models = cfg.models.map((m): Model => {
    const tables = new Map<string, ModelPrices>();
    const tableFor = (p: ProviderConfig) => tables.get(p.kind) ?? tables.set(p.kind, modelPrices(m, p.kind)).get(p.kind)!;
    const routes = m.routes.map((r) => {
      const provider = providers.get(r.provider)!;
      return route(r, provider, tableFor(provider));
    });
    return {
      id: m.id,
      aliases: m.aliases ?? [],
      displayName: m.display_name ?? m.id,
      ownedBy: m.owned_by ?? m.routes[0]!.provider,
      created: m.created ?? DEFAULT_CREATED,
      modalities: m.modalities,
      endpoints: m.endpoints,
      priceTables: [...tables.values()],
      imagePrices: imagePricesOf(m),
      maxOutputTokens: m.max_output_tokens ?? 32_000,
      routes,
      weighted: routes.some((r) => r.weight !== undefined),
      publicPricing: m.pricing,
    };
  });
  const byName = new Map<string, Model>();
  const patterns: [prefix: string, model: Model][] = [];
  for (const m of models) {
    for (const n of [m.id, ...m.aliases]) {
      if (isAliasPattern(n)) patterns.push([n.slice(0, -1), m]);
      else byName.set(n, m);
    }
  }
  // The exact map is the hot path; the patterns (a handful) are walked only for a name it lacks, in
  // a function of their own: an arrow over `name` here cost every lookup a scope object.
  const lookup = (name: string) => byName.get(name) ?? byPattern(patterns, name);
  const version =
    cfg.catalogVersion ??
    createHash("sha256")
      .update(JSON.stringify(cfg.models))
      .digest("hex")
      .slice(0, 12);
  return { version, models, lookup, hasFreeModel: models.some(isFree) };
}

/** The first alias pattern (`prefix*`) that `name` starts with. */
function byPattern(patterns: readonly [prefix: string, model: Model][], name: string): Model | undefined {
  for (const [prefix, model] of patterns) if (name.startsWith(prefix)) return model;
  return undefined;
}
