import { Type as T, type Static } from "@sinclair/typebox";

const Usd = T.Number({ minimum: 0 });

/** Token prices in USD per 1M tokens; web_search in USD per 1,000 searches (docs/pricing.md). */
const TokenPriceFields = {
  input: T.Optional(Usd),
  output: T.Optional(Usd),
  /** Tokens read from the prompt cache. */
  cache_read: T.Optional(Usd),
  /** Tokens written to a 5-minute cache (or a provider's one cache-write rate). */
  cache_write: T.Optional(Usd),
  /** Tokens written to a 1-hour cache. */
  cache_write_1h: T.Optional(Usd),
  web_search: T.Optional(Usd),
};

export const Pricing = T.Object(
  {
    ...TokenPriceFields,
    per_image: T.Optional(Usd),
    /** Token-priced images: image input (edit sources) and output tokens, with `input` for the prompt (docs/pricing.md#images). */
    image_input: T.Optional(Usd),
    image_output: T.Optional(Usd),
  },
  { additionalProperties: false },
);

/** A service tier's prices; unset classes keep the base price. */
export const TierPrices = T.Object(TokenPriceFields, { additionalProperties: false });
export type TierPrices = Static<typeof TierPrices>;

/** A long-context tier: above this prompt size its prices apply to the whole request. */
export const PricingTier = T.Object(
  {
    above_input_tokens: T.Integer({ minimum: 0 }),
    input: T.Optional(Usd),
    output: T.Optional(Usd),
    cache_read: T.Optional(Usd),
    cache_write: T.Optional(Usd),
    cache_write_1h: T.Optional(Usd),
  },
  { additionalProperties: false },
);

export const Endpoint = T.Union([
  T.Literal("messages"),
  T.Literal("chat.completions"),
  T.Literal("images.generations"),
  T.Literal("images.edits"),
]);
export type Endpoint = Static<typeof Endpoint>;

export const ProviderKind = T.Union([T.Literal("anthropic"), T.Literal("openai"), T.Literal("demo")]);
export type ProviderKind = Static<typeof ProviderKind>;

/**
 * What an upstream takes beyond its plain dialect, read only when a request is translated to it
 * (docs/translation.md, Capabilities). Set per provider, overridden per route; unset fields take
 * DEFAULT_CAPABILITIES. Each field applies to one provider kind (CAPABILITY_KIND in load.ts).
 */
export const Capabilities = T.Object(
  {
    /** Chat upstream: a reasoning model that takes `reasoning_effort` (thinking → reasoning_effort). */
    reasoning: T.Optional(T.Boolean()),
    /** Chat upstream: takes `reasoning_content` on assistant history turns (DeepSeek, vLLM reasoning parsers). */
    reasoning_content: T.Optional(T.Boolean()),
    /** Chat upstream: takes `top_k` (vLLM, llama.cpp). */
    top_k: T.Optional(T.Boolean()),
    /** Messages upstream: how reasoning_effort becomes thinking; "none" for a model without thinking. */
    thinking: T.Optional(T.Union([T.Literal("budget"), T.Literal("adaptive"), T.Literal("none")])),
    /** Messages upstream: takes output_config.format (json_schema response_format). */
    structured_outputs: T.Optional(T.Boolean()),
    /** Messages upstream: takes only its own temperature and top_p (newest models). */
    fixed_sampling: T.Optional(T.Boolean()),
    /** Messages upstream: "auto" puts cache breakpoints on a Chat or Responses request that sent none (docs/translation.md). */
    prompt_cache: T.Optional(T.Union([T.Literal("auto"), T.Literal("off")])),
  },
  { additionalProperties: false },
);
export type Capabilities = Static<typeof Capabilities>;

export const ProviderConfig = T.Object(
  {
    id: T.String({ minLength: 1 }),
    kind: ProviderKind,
    base_url: T.Optional(T.String({ pattern: "^https?://" })),
    api_key: T.Optional(T.String()),
    /** Several keys of one provider, instead of api_key: requests go to the key with fewest in flight; an overloaded key rests (docs/operations.md#several-keys-and-weighted-routes). */
    api_keys: T.Optional(T.Array(T.String())),
    /** Extra headers sent upstream (OpenRouter's HTTP-Referer, …). */
    headers: T.Optional(T.Record(T.String(), T.String())),
    /**
     * Milliseconds to wait for the upstream's answer to start (its headers) before trying the next
     * route. Default: 60 000 for a stream, 600 000 for a non-streamed call (its headers come with
     * the whole answer). Defaults of all three: src/relay/timeouts.ts.
     */
    timeout_ms: T.Optional(T.Integer({ minimum: 1 })),
    /** Milliseconds the body or stream may stay silent while the gateway waits on it (default 120 000). */
    idle_timeout_ms: T.Optional(T.Integer({ minimum: 1 })),
    /** Milliseconds for the whole upstream call, request sent to last byte (default 900 000). */
    total_timeout_ms: T.Optional(T.Integer({ minimum: 1 })),
    /** Chat upstreams: which field carries the output cap (OpenAI wants max_completion_tokens, many compatible servers max_tokens). */
    max_tokens_field: T.Optional(T.Union([T.Literal("max_tokens"), T.Literal("max_completion_tokens")])),
    capabilities: T.Optional(Capabilities),
  },
  { additionalProperties: false },
);
export type ProviderConfig = Static<typeof ProviderConfig>;

export const RouteConfig = T.Object(
  {
    provider: T.String({ minLength: 1 }),
    model: T.String({ minLength: 1 }),
    /** Routes with a weight share the model's traffic in proportion; routes without one are fallbacks, in order. */
    weight: T.Optional(T.Integer({ minimum: 1 })),
    /** Overrides the provider's capabilities field by field, for this upstream model. */
    capabilities: T.Optional(Capabilities),
  },
  { additionalProperties: false },
);
export type RouteConfig = Static<typeof RouteConfig>;

export const ModelConfig = T.Object(
  {
    id: T.String({ minLength: 1 }),
    aliases: T.Optional(T.Array(T.String({ minLength: 1 }))),
    display_name: T.Optional(T.String()),
    owned_by: T.Optional(T.String()),
    created: T.Optional(T.Integer({ minimum: 0 })),
    modalities: T.Array(T.String({ minLength: 1 }), { minItems: 1 }),
    endpoints: T.Array(Endpoint, { minItems: 1 }),
    pricing: Pricing,
    pricing_tiers: T.Optional(T.Array(PricingTier)),
    /**
     * Prices by the service tier the upstream's answer reports (OpenAI's service_tier; `fast`: also
     * Anthropic's usage.speed); absent: base prices.
     */
    service_tiers: T.Optional(
      T.Object({ flex: T.Optional(TierPrices), priority: T.Optional(TierPrices), fast: T.Optional(TierPrices) }, { additionalProperties: false }),
    ),
    max_output_tokens: T.Optional(T.Integer({ minimum: 1 })),
    routes: T.Array(RouteConfig, { minItems: 1 }),
  },
  { additionalProperties: false },
);
export type ModelConfig = Static<typeof ModelConfig>;

export const ConfigSchema = T.Object(
  {
    server: T.Optional(
      T.Object(
        {
          port: T.Optional(T.Integer({ minimum: 0, maximum: 65535 })),
          host: T.Optional(T.String()),
          database: T.Optional(T.String({ minLength: 1 })),
          public_url: T.Optional(T.String()),
          /** Proxies whose X-Forwarded-For is believed: addresses or CIDRs. `false` is the old spelling of []. */
          trust_proxy: T.Optional(T.Union([T.Array(T.String({ minLength: 1 })), T.Literal(false)])),
          /** One JSON line per request on stdout. */
          access_log: T.Optional(T.Boolean()),
          /** GET /metrics: "loopback" (direct callers on 127.0.0.0/8 or ::1 only), "off", or a bearer token. */
          metrics: T.Optional(T.String({ minLength: 1 })),
          /** On SIGTERM/SIGINT, how long requests and streams in flight may run on before they are ended. */
          shutdown_timeout_s: T.Optional(T.Number({ minimum: 0, maximum: 3600 })),
        },
        { additionalProperties: false },
      ),
    ),
    database: T.Optional(
      T.Object(
        {
          /** postgres:// or postgresql://: the shared database of several instances (docs/scaling.md); absent: SQLite at server.database. */
          url: T.Optional(T.String({ minLength: 1 })),
        },
        { additionalProperties: false },
      ),
    ),
    limits: T.Optional(
      T.Object(
        {
          default_rpm: T.Optional(T.Integer({ minimum: 1 })),
          count_tokens_rpm: T.Optional(T.Integer({ minimum: 1 })),
          /** All of an account's keys together, every key route (count_tokens included); absent: no account-wide limit. */
          account_rpm: T.Optional(T.Integer({ minimum: 1 })),
          /** redis:// or rediss:// (Redis or Valkey): the token buckets shared by every instance; absent: each process its own. */
          store: T.Optional(T.String({ minLength: 1 })),
        },
        { additionalProperties: false },
      ),
    ),
    cluster: T.Optional(
      T.Object(
        {
          /** This instance's name in the shared database's `instances` table; default: hostname-pid. */
          instance_id: T.Optional(T.String({ minLength: 1, maxLength: 200 })),
          /** An instance silent this long has the holds of its running requests released by the others. */
          hold_timeout_s: T.Optional(T.Integer({ minimum: 5, maximum: 3600 })),
        },
        { additionalProperties: false },
      ),
    ),
    logs: T.Optional(
      T.Object({ retention_days: T.Optional(T.Integer({ minimum: 1, maximum: 36500 })) }, { additionalProperties: false }),
    ),
    dashboard: T.Optional(
      T.Object(
        {
          /**
           * "closed": only the operator creates accounts (`gateway account create`); POST /api/register answers 403.
           * "invite": a registration needs an unused redemption code, whose value is its starting credit.
           */
          registration: T.Optional(T.Union([T.Literal("open"), T.Literal("invite"), T.Literal("closed")])),
          /** Credited to a new registration as one registration_credit ledger entry (1 USD by default, docs/dashboard.md#registration). */
          starting_credit_usd: T.Optional(T.Number({ minimum: 0 })),
          /** All registrations' starting credits of a UTC day, across instances; past it a registration starts at 0. */
          starting_credit_daily_usd: T.Optional(T.Number({ minimum: 0 })),
          /** How long a dashboard login lasts. */
          session_days: T.Optional(T.Number({ exclusiveMinimum: 0, maximum: 366 })),
          /** Keys not revoked that a holder may have when making one at POST /api/keys; 0: holders make none. The CLI is not limited. */
          max_keys_per_account: T.Optional(T.Integer({ minimum: 0 })),
          /** Whom a holder asks for credit (an email or a URL), shown on the top-up page. */
          support_contact: T.Optional(T.String({ minLength: 1, maxLength: 300 })),
        },
        { additionalProperties: false },
      ),
    ),
    email: T.Optional(
      T.Object(
        {
          /** smtp://user:pass@host:587 (STARTTLS when offered) or smtps://user:pass@host:465 (TLS from the start). */
          smtp_url: T.String({ minLength: 1 }),
          /** The From header: "Gateway <gateway@example.com>" or a bare address. */
          from: T.String({ minLength: 3 }),
        },
        { additionalProperties: false },
      ),
    ),
    notifications: T.Optional(
      T.Object(
        {
          /** Where the gateway POSTs its signed JSON events (docs/operations.md#webhook-events). */
          webhook_url: T.String({ minLength: 1 }),
          /** The HMAC-SHA256 key of the x-gateway-signature header. */
          webhook_secret: T.String({ minLength: 16 }),
        },
        { additionalProperties: false },
      ),
    ),
    payments: T.Optional(
      T.Object(
        {
          /** Top-ups through Stripe Checkout (docs/dashboard.md, Top-ups); absent: the operator credits balances. */
          stripe: T.Optional(
            T.Object(
              {
                secret_key: T.String({ minLength: 1 }),
                webhook_secret: T.String({ minLength: 1 }),
                /** Where Stripe's API is; tests point it at a loopback mock. Default https://api.stripe.com. */
                api_base: T.Optional(T.String()),
              },
              { additionalProperties: false },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    catalog: T.Optional(T.Object({ version: T.Optional(T.String({ minLength: 1 })) }, { additionalProperties: false })),
    providers: T.Optional(T.Array(ProviderConfig)),
    models: T.Optional(T.Array(ModelConfig)),
  },
  { additionalProperties: false },
);
export type ConfigFile = Static<typeof ConfigSchema>;
