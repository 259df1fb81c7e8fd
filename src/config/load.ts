import { Value, ValueErrorType, type ValueError } from "@sinclair/typebox/value";
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { parse as parseToml } from "smol-toml";
import { ConfigSchema, type Capabilities, type ConfigFile, type ModelConfig, type ProviderConfig, type ProviderKind } from "./schema.ts";
import { jsonPath } from "../core/json-path.ts";
import { DEFAULT_MODELS, DEFAULT_PROVIDERS } from "./defaults.ts";
import { parseCidr, type Cidr } from "../core/ip.ts";
import { usdToNano } from "../core/money.ts";
import { emailConfig, notificationsConfig, type EmailConfig, type NotificationsConfig } from "./notices.ts";

import { ConfigError } from "./error.ts";
import { aliasPatternConflict } from "./aliases.ts";

export { ConfigError };

export interface Config {
  port: number;
  host: string;
  database: string;
  /** `[database] url`: PostgreSQL instead of the SQLite file at `database`; null: SQLite. */
  databaseUrl: string | null;
  publicUrl: string;
  /** Direct peers whose X-Forwarded-For is walked (from the right, past these hops); empty: never. */
  trustProxy: Cidr[];
  accessLog: boolean;
  metrics: MetricsAccess;
  shutdownTimeoutMs: number;
  logRetentionDays: number;
  defaultRpm: number;
  countTokensRpm: number;
  /** `[limits] account_rpm`: one bucket for all of an account's keys, on every key route; null: none. */
  accountRpm: number | null;
  /** `[limits] store`: the Redis (or Valkey) URL of token buckets shared across instances; null: in-process. */
  limitStore: string | null;
  /** `[cluster]`: how instances sharing a PostgreSQL database name themselves and give up on a silent one. */
  cluster: ClusterConfig;
  catalogVersion?: string;
  dashboard: DashboardConfig;
  /** `[payments.stripe]`, or null: top-ups are the operator's (`gateway account credit`). */
  stripe: StripeConfig | null;
  /** `[email]`, or null: no email is sent and addresses are not verified. */
  email: EmailConfig | null;
  /** `[notifications]`, or null: no webhook events. */
  notifications: NotificationsConfig | null;
  providers: ProviderConfig[];
  models: ModelConfig[];
  /** Where it came from, for messages: a path or "built-in defaults". */
  source: string;
}

export interface ClusterConfig {
  instanceId: string;
  holdTimeoutMs: number;
}

export interface DashboardConfig {
  registration: "open" | "invite" | "closed";
  startingCreditNano: number;
  /** `starting_credit_daily_usd`: the registrations' starting credits of one UTC day, all instances together. */
  startingCreditDailyNano: number;
  sessionTtlMs: number;
  /** `[dashboard] max_keys_per_account`: POST /api/keys refuses past this many keys not revoked. */
  maxKeysPerAccount: number;
  /** `[dashboard] support_contact`: an email or URL the top-up page names for credit; null: none given. */
  supportContact: string | null;
}

export interface StripeConfig {
  secretKey: string;
  webhookSecret: string;
  /** Stripe's API: https://api.stripe.com unless `api_base` says otherwise. */
  apiBase: URL;
}

/** Who may read GET /metrics. */
export type MetricsAccess = { mode: "loopback" } | { mode: "off" } | { mode: "token"; token: string };

export interface LoadOptions {
  /**
   * "keep": a variable left unset in a secret field (a provider's api_key, api_keys, headers; Stripe's
   * keys) stays as written, `${NAME}`, instead of stopping the load. For commands that read the
   * config and never call a provider (`gateway prices`); every other variable is still required.
   */
  unsetSecrets?: "keep";
}

/** Reads the TOML file (or the built-in defaults), interpolates ${ENV} and validates every field. */
export function loadConfig(file: string | undefined, env: Record<string, string | undefined> = process.env, opts: LoadOptions = {}): Config {
  if (!file) return resolve({}, "built-in defaults");
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new ConfigError(`${file}: cannot read the config file (${(e as Error).message})`);
  }
  let raw: unknown;
  try {
    // smol-toml, not Bun.TOML: Bun's errors name no line or column (they carry the caller's).
    raw = parseToml(text);
  } catch (e) {
    throw new ConfigError(`${file}: not valid TOML: ${tomlError(e)}`);
  }
  return parseConfig(raw, file, env, opts);
}

export function parseConfig(raw: unknown, source: string, env: Record<string, string | undefined> = process.env, opts: LoadOptions = {}): Config {
  const data = interpolate(raw, "", env, source, opts.unsetSecrets === "keep");
  if ((data as { server?: { trust_proxy?: unknown } })?.server?.trust_proxy === true) {
    // `true` believed any caller's X-Forwarded-For, which let anyone pass a key's IP allow-list.
    throw new ConfigError(`${source}: server.trust_proxy: list the proxies whose X-Forwarded-For to believe, e.g. ["127.0.0.1", "10.0.0.0/8"] (true is no longer accepted)`);
  }
  const first = Value.Errors(ConfigSchema, data).First();
  if (first) {
    throw new ConfigError(`${source}: ${jsonPath(first.path) || "(top level)"}: ${reason(first)}${describeValue(first.value)}`);
  }
  return resolve(data as ConfigFile, source);
}

function resolve(file: ConfigFile, source: string): Config {
  let providers = file.providers ?? [];
  const models = file.models ?? DEFAULT_MODELS;
  // Without a [[models]] section the demo catalog is served, so its provider must exist.
  if (!file.models && !providers.some((p) => p.id === "demo")) providers = [...providers, ...DEFAULT_PROVIDERS];
  const cfg: Config = {
    port: file.server?.port ?? 8080,
    host: file.server?.host ?? "0.0.0.0",
    database: file.server?.database ?? "data/gateway.db",
    databaseUrl: serviceUrl(file.database?.url, ["postgres:", "postgresql:"], "database.url", "a PostgreSQL URL such as postgres://user:password@host:5432/gateway", source),
    publicUrl: publicUrl(file.server?.public_url, source),
    trustProxy: trustedProxies(file.server?.trust_proxy, source),
    accessLog: file.server?.access_log ?? true,
    metrics: metricsAccess(file.server?.metrics),
    shutdownTimeoutMs: Math.round((file.server?.shutdown_timeout_s ?? 30) * 1000),
    logRetentionDays: file.logs?.retention_days ?? 90,
    defaultRpm: file.limits?.default_rpm ?? 20,
    countTokensRpm: file.limits?.count_tokens_rpm ?? 60,
    accountRpm: file.limits?.account_rpm ?? null,
    // Redis and Valkey share the scheme.
    limitStore: serviceUrl(file.limits?.store, ["redis:", "rediss:"], "limits.store", "a Redis or Valkey URL such as redis://cache:6379 (rediss:// for TLS)", source),
    cluster: { instanceId: file.cluster?.instance_id ?? `${hostname()}-${process.pid}`, holdTimeoutMs: (file.cluster?.hold_timeout_s ?? 30) * 1000 },
    catalogVersion: file.catalog?.version,
    dashboard: dashboard(file.dashboard, source),
    stripe: stripe(file.payments?.stripe, source),
    email: emailConfig(file.email, file.server?.public_url, source),
    notifications: notificationsConfig(file.notifications, source),
    providers,
    models,
    source,
  };
  checkReferences(cfg);
  return cfg;
}

// The dashboard compares a browser's Origin with it: it must be an origin a browser can send.
function publicUrl(value: string | undefined, source: string): string {
  if (!value) return "";
  let url: URL | null = null;
  try {
    url = new URL(value);
  } catch {}
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
    throw new ConfigError(`${source}: server.public_url: not an http(s) URL (got ${JSON.stringify(value)})`);
  }
  return value;
}

// A service the gateway connects to (`[database] url`, `[limits] store`), refused here rather than at the first
// request. The value may carry a password: a refusal names its scheme only.
function serviceUrl(value: string | undefined, schemes: string[], field: string, expected: string, source: string): string | null {
  if (value === undefined) return null;
  let url: URL | null = null;
  try {
    url = new URL(value);
  } catch {}
  if (!url || !schemes.includes(url.protocol) || !url.hostname) {
    const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(value)?.[0] ?? "no scheme";
    throw new ConfigError(`${source}: ${field}: not ${expected} (got ${scheme})`);
  }
  return value;
}

function dashboard(d: ConfigFile["dashboard"], source: string): DashboardConfig {
  const nano = (field: "starting_credit_usd" | "starting_credit_daily_usd", fallback: number) => {
    try {
      return usdToNano(d?.[field] ?? fallback);
    } catch (e) {
      throw new ConfigError(`${source}: dashboard.${field}: ${(e as Error).message}`);
    }
  };
  return {
    registration: d?.registration ?? "open",
    startingCreditNano: nano("starting_credit_usd", 1),
    // 50 registrations' worth of the 1 USD default a day: enough for a launch, a bounded loss to a farm.
    startingCreditDailyNano: nano("starting_credit_daily_usd", 50),
    sessionTtlMs: Math.round((d?.session_days ?? 30) * 24 * 3600 * 1000),
    maxKeysPerAccount: d?.max_keys_per_account ?? 50,
    supportContact: d?.support_contact?.trim() || null,
  };
}

function stripe(s: NonNullable<ConfigFile["payments"]>["stripe"], source: string): StripeConfig | null {
  if (!s) return null;
  const base = s.api_base ?? "https://api.stripe.com";
  let apiBase: URL | null = null;
  try {
    apiBase = new URL(base);
  } catch {}
  if (!apiBase || (apiBase.protocol !== "http:" && apiBase.protocol !== "https:") || (apiBase.pathname !== "/" && apiBase.pathname !== "")) {
    throw new ConfigError(`${source}: payments.stripe.api_base: not an http(s) origin such as https://api.stripe.com (got ${JSON.stringify(base)})`);
  }
  return { secretKey: s.secret_key, webhookSecret: s.webhook_secret, apiBase };
}

function trustedProxies(list: string[] | false | undefined, source: string): Cidr[] {
  if (!list) return [];
  return list.map((entry, i) => {
    try {
      return parseCidr(entry);
    } catch (e) {
      throw new ConfigError(`${source}: server.trust_proxy[${i}]: ${(e as Error).message}`);
    }
  });
}

function metricsAccess(value: string | undefined): MetricsAccess {
  if (value === undefined || value === "loopback") return { mode: "loopback" };
  if (value === "off") return { mode: "off" };
  return { mode: "token", token: value };
}

/** smol-toml's message opens with a fixed phrase and goes on with a code excerpt: one line with the place. */
function tomlError(e: unknown): string {
  const err = e as { message?: string; line?: number; column?: number };
  const first = (err.message ?? String(e)).split("\n")[0]!.replace(/^Invalid TOML document:\s*/i, "");
  return typeof err.line === "number" ? `line ${err.line}, column ${err.column}: ${first}` : first;
}

/** A request's tried keys are one bitmask (relay/capacity.ts). */
const MAX_KEYS = 32;

function checkReferences(cfg: Config): void {
  const fail = (path: string, why: string): never => {
    throw new ConfigError(`${cfg.source}: ${path}: ${why}`);
  };
  const providerById = new Map<string, ProviderConfig>();
  cfg.providers.forEach((p, i) => {
    if (providerById.has(p.id)) fail(`providers[${i}].id`, `duplicate provider id '${p.id}'`);
    providerById.set(p.id, p);
    if (p.kind !== "demo" && !p.base_url) fail(`providers[${i}].base_url`, `required for kind '${p.kind}'`);
    if (p.api_keys && p.api_key !== undefined) fail(`providers[${i}].api_keys`, "give either api_key or api_keys, not both");
    if (p.api_keys?.length === 0) fail(`providers[${i}].api_keys`, "empty: list at least one key, or use api_key");
    if (p.api_keys && p.api_keys.length > MAX_KEYS) fail(`providers[${i}].api_keys`, `at most ${MAX_KEYS} keys per provider`);
    p.api_keys?.forEach((k, j) => {
      if (!k.trim()) fail(`providers[${i}].api_keys[${j}]`, "empty key");
    });
    checkCapabilities(p.capabilities, p, `providers[${i}].capabilities`, fail);
  });
  const names = new Set<string>();
  cfg.models.forEach((m, i) => {
    for (const [j, name] of [m.id, ...(m.aliases ?? [])].entries()) {
      if (names.has(name)) fail(j === 0 ? `models[${i}].id` : `models[${i}].aliases[${j - 1}]`, `'${name}' is already used by another model`);
      names.add(name);
    }
    m.routes.forEach((r, j) => {
      const provider = providerById.get(r.provider);
      if (!provider) return fail(`models[${i}].routes[${j}].provider`, `no provider with id '${r.provider}'`);
      checkCapabilities(r.capabilities, provider, `models[${i}].routes[${j}].capabilities`, fail);
    });
    const text = m.endpoints.some((e) => e === "messages" || e === "chat.completions");
    const image = m.endpoints.some((e) => e.startsWith("images."));
    if (text && image) fail(`models[${i}].endpoints`, "a model is sold either on text or on image endpoints, not both");
    if (image && m.pricing.per_image === undefined) fail(`models[${i}].pricing.per_image`, "required for image models");
    if (image && (m.pricing.image_input !== undefined || m.pricing.image_output !== undefined)) {
      // A class left unset would be billed at nothing: token-priced images need each class the usage reports.
      for (const cls of ["input", "image_input", "image_output"] as const) {
        if (m.pricing[cls] === undefined) fail(`models[${i}].pricing.${cls}`, "required for image models priced by image tokens (image_input or image_output set)");
      }
    }
    if (text) {
      for (const cls of ["per_image", "image_input", "image_output"] as const) {
        if (m.pricing[cls] !== undefined) fail(`models[${i}].pricing.${cls}`, "applies to image models only");
      }
    }
    if (text && (m.pricing.input === undefined || m.pricing.output === undefined))
      fail(`models[${i}].pricing`, "text models need input and output prices");
    checkPrices(m, `models[${i}]`, text, fail);
  });
  const conflict = aliasPatternConflict(cfg.models);
  if (conflict) fail(...conflict);
}

/** Each price converts to whole nano-dollars; tiers belong to text models, one per threshold. */
function checkPrices(m: ModelConfig, path: string, text: boolean, fail: (path: string, why: string) => never): void {
  const tables: [string, Record<string, unknown>][] = [[`${path}.pricing`, m.pricing]];
  (m.pricing_tiers ?? []).forEach((t, j) => tables.push([`${path}.pricing_tiers[${j}]`, t]));
  for (const [name, t] of Object.entries(m.service_tiers ?? {})) if (t) tables.push([`${path}.service_tiers.${name}`, t]);
  for (const [at, table] of tables) {
    for (const [field, v] of Object.entries(table)) {
      if (field === "above_input_tokens" || typeof v !== "number") continue;
      try {
        usdToNano(v);
      } catch {
        fail(`${at}.${field}`, `not a USD price with at most 9 decimals (got ${v})`);
      }
    }
  }
  if (!text && m.pricing_tiers) fail(`${path}.pricing_tiers`, "applies to text models only");
  if (!text && m.service_tiers) fail(`${path}.service_tiers`, "applies to text models only");
  const seen = new Set<number>();
  (m.pricing_tiers ?? []).forEach((t, j) => {
    if (seen.has(t.above_input_tokens)) fail(`${path}.pricing_tiers[${j}].above_input_tokens`, `another tier already starts above ${t.above_input_tokens}`);
    seen.add(t.above_input_tokens);
  });
}

// The kind whose translator reads each capability. Set on another kind it would be ignored without
// a word (a Messages upstream takes top_k natively; the demo provider is never translated to).
const CAPABILITY_KIND: Record<keyof Capabilities, ProviderKind> = {
  reasoning: "openai",
  reasoning_content: "openai",
  top_k: "openai",
  thinking: "anthropic",
  structured_outputs: "anthropic",
  fixed_sampling: "anthropic",
  prompt_cache: "anthropic",
};

function checkCapabilities(caps: Capabilities | undefined, provider: ProviderConfig, path: string, fail: (path: string, why: string) => never): void {
  for (const field of Object.keys(caps ?? {}) as (keyof Capabilities)[]) {
    const kind = CAPABILITY_KIND[field];
    if (provider.kind !== kind) fail(`${path}.${field}`, `applies to providers of kind '${kind}' only; '${provider.id}' is kind '${provider.kind}'`);
  }
}

const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;
/** Fields that carry only credentials: what LoadOptions.unsetSecrets may leave unresolved. */
const SECRET_FIELD = /^(providers\[\d+\]\.(api_key|api_keys\[\d+\]|headers\..+)|payments\.stripe\.(secret_key|webhook_secret)|email\.smtp_url|notifications\.webhook_secret)$/;

function interpolate(value: unknown, path: string, env: Record<string, string | undefined>, source: string, keepSecrets: boolean): unknown {
  if (typeof value === "string") {
    return value.replace(ENV_REF, (ref, name: string) => {
      const v = env[name];
      if (v !== undefined) return v;
      if (keepSecrets && SECRET_FIELD.test(path)) return ref;
      throw new ConfigError(`${source}: ${path || "(top level)"}: environment variable ${name} is not set`);
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => interpolate(v, `${path}[${i}]`, env, source, keepSecrets));
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = interpolate(v, path ? `${path}.${k}` : k, env, source, keepSecrets);
    return out;
  }
  return value;
}

/** TypeBox's wording where an operator needs a different one: the allowed words, or that a field is unknown. */
function reason(e: ValueError): string {
  if (e.type === ValueErrorType.ObjectAdditionalProperties) return "unknown field";
  if (e.type === ValueErrorType.ObjectRequiredProperty) return "required field is missing";
  const options = (e.schema.anyOf as { const?: unknown }[] | undefined)?.map((s) => s.const);
  if (e.type === ValueErrorType.Union && options?.every((o) => typeof o === "string")) return `expected one of ${options.join(", ")}`;
  return e.message;
}

function describeValue(v: unknown): string {
  if (v === undefined) return "";
  const s = JSON.stringify(v);
  return s && s.length <= 60 ? ` (got ${s})` : "";
}
