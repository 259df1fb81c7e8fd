import { Value, ValueErrorType, type ValueError } from "@sinclair/typebox/value";
import { readFileSync } from "node:fs";
import { ConfigSchema, type ConfigFile, type ModelConfig, type ProviderConfig } from "./schema.ts";
import { jsonPath } from "../json-path.ts";
import { DEFAULT_MODELS, DEFAULT_PROVIDERS } from "./defaults.ts";

export class ConfigError extends Error {}

export interface Config {
  port: number;
  host: string;
  database: string;
  publicUrl: string;
  trustProxy: boolean;
  defaultRpm: number;
  countTokensRpm: number;
  catalogVersion?: string;
  providers: ProviderConfig[];
  models: ModelConfig[];
  /** Where it came from, for messages: a path or "built-in defaults". */
  source: string;
}

/** Reads the TOML file (or the built-in defaults), interpolates ${ENV} and validates every field. */
export function loadConfig(file: string | undefined, env: Record<string, string | undefined> = process.env): Config {
  if (!file) return resolve({}, "built-in defaults");
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new ConfigError(`${file}: cannot read the config file (${(e as Error).message})`);
  }
  let raw: unknown;
  try {
    raw = Bun.TOML.parse(text);
  } catch (e) {
    throw new ConfigError(`${file}: not valid TOML: ${(e as Error).message}`);
  }
  return parseConfig(raw, file, env);
}

export function parseConfig(raw: unknown, source: string, env: Record<string, string | undefined> = process.env): Config {
  const data = interpolate(raw, "", env, source);
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
    publicUrl: file.server?.public_url ?? "",
    trustProxy: file.server?.trust_proxy ?? false,
    defaultRpm: file.limits?.default_rpm ?? 20,
    countTokensRpm: file.limits?.count_tokens_rpm ?? 60,
    catalogVersion: file.catalog?.version,
    providers,
    models,
    source,
  };
  checkReferences(cfg);
  return cfg;
}

function checkReferences(cfg: Config): void {
  const fail = (path: string, why: string) => {
    throw new ConfigError(`${cfg.source}: ${path}: ${why}`);
  };
  const providerIds = new Set<string>();
  cfg.providers.forEach((p, i) => {
    if (providerIds.has(p.id)) fail(`providers[${i}].id`, `duplicate provider id '${p.id}'`);
    providerIds.add(p.id);
    if (p.kind !== "demo" && !p.base_url) fail(`providers[${i}].base_url`, `required for kind '${p.kind}'`);
  });
  const names = new Set<string>();
  cfg.models.forEach((m, i) => {
    for (const [j, name] of [m.id, ...(m.aliases ?? [])].entries()) {
      if (names.has(name)) fail(j === 0 ? `models[${i}].id` : `models[${i}].aliases[${j - 1}]`, `'${name}' is already used by another model`);
      names.add(name);
    }
    m.routes.forEach((r, j) => {
      if (!providerIds.has(r.provider)) fail(`models[${i}].routes[${j}].provider`, `no provider with id '${r.provider}'`);
    });
    const text = m.endpoints.some((e) => e === "messages" || e === "chat.completions");
    const image = m.endpoints.some((e) => e.startsWith("images."));
    if (text && image) fail(`models[${i}].endpoints`, "a model is sold either on text or on image endpoints, not both");
    if (image && m.pricing.per_image === undefined) fail(`models[${i}].pricing.per_image`, "required for image models");
    if (text && (m.pricing.input === undefined || m.pricing.output === undefined))
      fail(`models[${i}].pricing`, "text models need input and output prices");
  });
}

const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

function interpolate(value: unknown, path: string, env: Record<string, string | undefined>, source: string): unknown {
  if (typeof value === "string") {
    return value.replace(ENV_REF, (_, name: string) => {
      const v = env[name];
      if (v === undefined) throw new ConfigError(`${source}: ${path || "(top level)"}: environment variable ${name} is not set`);
      return v;
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => interpolate(v, `${path}[${i}]`, env, source));
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = interpolate(v, path ? `${path}.${k}` : k, env, source);
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
