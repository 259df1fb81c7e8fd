import { Type as T, type Static, type TSchema } from "@sinclair/typebox";

// The JSON answers of /api/ (docs/dashboard.md), one schema each. The handlers build their answers
// as these types (a field that drifts is a type error), the endpoint table attaches each to its row
// so GET /openapi.json shows it, and the dashboard's browser code imports the types (type-only: no
// TypeBox in its bundle). tests/api/answer-schemas.test.ts checks the real answers against them.
// Nothing here may import the server's modules: the browser's compiler reads this file too.

const Nullable = <S extends TSchema>(s: S) => T.Union([s, T.Null()]);
/** An amount in USD, a number of at most 9 decimals (the ledger's nano-dollars). */
const Usd = T.Number({ description: "USD" });
/** A time as the gateway writes them: ISO 8601 in UTC, with milliseconds. */
const Time = T.String({ pattern: "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$" });
const Count = T.Integer({ minimum: 0 });
const ListOf = <S extends TSchema>(item: S) => T.Object({ object: T.Literal("list"), data: T.Array(item) });
/** A page of a list that goes on: `next` is the `before` of the following page, null on the last. */
const PageOf = <S extends TSchema>(item: S, next: string) => T.Object({ object: T.Literal("list"), data: T.Array(item), next: Nullable(T.String({ description: next })) });

/** The one error shape of every /api/ refusal (docs/api.md#errors). */
export const ErrorEnvelope = T.Object({
  error: T.Object({ type: T.String(), code: T.String(), message: T.String(), request_id: T.String() }),
});
export type ErrorEnvelope = Static<typeof ErrorEnvelope>;

// An account as the holder and the operator both see it: who, then its money.
const ACCOUNT_WHO = { object: T.Literal("account"), id: T.Integer(), email: T.String(), admin: T.Boolean() };
const ACCOUNT_MONEY = { balance_usd: Usd, held_usd: Usd };

// The account holder's own.

export const AccountView = T.Object({
  ...ACCOUNT_WHO,
  ...ACCOUNT_MONEY,
  spendable_usd: Usd,
  /** The holder's threshold (null: none set) and whether spendable is under it (docs/dashboard.md#the-accounts-figures). */
  low_balance: T.Object({ threshold_usd: Nullable(Usd), below: T.Boolean() }),
  /** False until the emailed link is used, for a registration under [email] (docs/dashboard.md#address-verification). */
  email_verified: T.Boolean(),
  /** Whether a login asks for a code from an authenticator app too (docs/dashboard.md#two-factor-login). */
  two_factor: T.Boolean(),
});
export type AccountView = Static<typeof AccountView>;

/**
 * GET /api/session: whether this browser's cookie opens a session, and its account if so. The page's
 * first question, answered 200 either way, so a visitor's first page logs no refused request.
 */
/** `password_reset`: whether the login page offers a reset by email (under [email]) or sends the visitor to the operator. */
export const SessionState = T.Union([T.Object({ logged_in: T.Literal(false), password_reset: T.Boolean() }), T.Object({ logged_in: T.Literal(true), account: AccountView })]);
export type SessionState = Static<typeof SessionState>;

/**
 * POST /api/register: the account, the starting credit given, whether the day's ceiling withheld it,
 * and whether a verification link was emailed (the credit then waits for it).
 */
export const Registered = T.Composite([AccountView, T.Object({ starting_credit_usd: Usd, starting_credit_limited: T.Boolean(), verification_sent: T.Boolean() })]);
export type Registered = Static<typeof Registered>;

/** POST /api/verify: the address verified and the starting credit it granted, 0 when the day's ceiling withheld it. */
export const Verified = T.Object({ verified: T.Literal(true), starting_credit_usd: Usd, starting_credit_limited: T.Boolean() });
export type Verified = Static<typeof Verified>;
/** POST /api/verify/resend: a new link emailed, replacing the last. */
export const VerificationSent = T.Object({ sent: T.Literal(true) });
export type VerificationSent = Static<typeof VerificationSent>;

/** POST /api/password/forgot: the same answer whether or not an account has the address. */
export const ResetRequested = T.Object({ requested: T.Literal(true) });
export type ResetRequested = Static<typeof ResetRequested>;
/** POST /api/password/reset: the new password set; every session of the account ended. */
export const PasswordReset = T.Object({ password_reset: T.Literal(true), sessions_ended: Count });
export type PasswordReset = Static<typeof PasswordReset>;
/**
 * POST /api/me/email and /api/me/email/confirm: `email` is the account's address now. Under [email]
 * a request only mails the confirmation (`confirmation_sent`); without it the address changes at once.
 */
export const EmailChange = T.Object({ email_changed: T.Boolean(), confirmation_sent: T.Boolean(), email: T.String() });
export type EmailChange = Static<typeof EmailChange>;

export const LoggedOut = T.Object({ logged_out: T.Literal(true) });
export type LoggedOut = Static<typeof LoggedOut>;
export const LoggedOutAll = T.Object({ logged_out: T.Literal(true), sessions_ended: Count });
export type LoggedOutAll = Static<typeof LoggedOutAll>;
export const PasswordChanged = T.Object({ password_changed: T.Literal(true), sessions_ended: Count });
export type PasswordChanged = Static<typeof PasswordChanged>;
/** POST /api/me/close's answer (docs/dashboard.md#closing-the-account); the session cookie is cleared with it. */
export const AccountClosed = T.Object({
  object: T.Literal("account"),
  id: T.Integer(),
  closed: T.Literal(true),
  closed_at: Time,
  forfeited_usd: Usd,
  keys_revoked: Count,
  sessions_ended: Count,
});
export type AccountClosed = Static<typeof AccountClosed>;

// Two-factor login (docs/dashboard.md#two-factor-login).

/**
 * POST /api/login's answer for an account with two-factor login on: no session yet; `token` goes
 * with a code to POST /api/login/second-factor, once, before `expires_at` (5 minutes).
 */
export const SecondFactorRequired = T.Object({ second_factor_required: T.Literal(true), token: T.String(), expires_at: Time });
export type SecondFactorRequired = Static<typeof SecondFactorRequired>;
export const LoginAnswer = T.Union([AccountView, SecondFactorRequired]);
export type LoginAnswer = Static<typeof LoginAnswer>;
/** POST /api/me/2fa/setup: a secret for the authenticator app, not in force until enabled with a code of it. */
export const TwoFactorSetup = T.Object({
  secret: T.String(),
  otpauth_uri: T.String(),
  /** The URI as a QR code: an SVG image as a data: URL. */
  qr_code: T.String({ pattern: "^data:image/svg\\+xml;base64," }),
  enabled: T.Literal(false),
});
export type TwoFactorSetup = Static<typeof TwoFactorSetup>;
/** POST /api/me/2fa/enable: on, with the recovery codes shown this once; the account's other sessions ended. */
export const TwoFactorEnabled = T.Object({ enabled: T.Literal(true), recovery_codes: T.Array(T.String()), sessions_ended: Count });
export type TwoFactorEnabled = Static<typeof TwoFactorEnabled>;
export const TwoFactorDisabled = T.Object({ enabled: T.Literal(false) });
export type TwoFactorDisabled = Static<typeof TwoFactorDisabled>;

const Names = Nullable(T.Array(T.String()));
const Period = T.Union([T.Literal("day"), T.Literal("week"), T.Literal("month")]);
/**
 * A key's budget that resets, in its current UTC period (as GET /v1/me shows it too): `reached` is
 * true once a request was refused for it in this period, the page's "budget reached" notice.
 */
export const BudgetView = T.Object({
  limit_usd: Usd,
  period: Period,
  spent_usd: Usd,
  reserved_usd: Usd,
  remaining_usd: Usd,
  resets_at: Time,
  reached: T.Boolean(),
});
export type BudgetView = Static<typeof BudgetView>;
/** A key as the dashboard shows it: its prefix, never the key or its hash. */
export const KeyView = T.Object({
  object: T.Literal("key"),
  id: T.Integer(),
  name: Nullable(T.String()),
  prefix: T.String(),
  status: T.Union([T.Literal("active"), T.Literal("expired"), T.Literal("revoked")]),
  quota_usd: Nullable(Usd),
  spent_usd: Usd,
  held_usd: Usd,
  budget_usd: Nullable(Usd),
  budget_period: Nullable(Period),
  budget: Nullable(BudgetView),
  models: Names,
  ip_allow: Names,
  rpm: Nullable(T.Integer()),
  expires_at: Nullable(Time),
  created_at: Time,
  revoked_at: Nullable(Time),
  last_used_at: Nullable(Time),
});
export type KeyView = Static<typeof KeyView>;
/** POST /api/keys: the key with the whole key, shown this once. */
export const NewKeyView = T.Composite([KeyView, T.Object({ key: T.String() })]);
export type NewKeyView = Static<typeof NewKeyView>;
/** The keys, and the rpm a key without its own gets: also the most a holder may set. */
export const KeyList = T.Composite([ListOf(KeyView), T.Object({ default_rpm: Count })]);
export type KeyList = Static<typeof KeyList>;

// The account's figures.

export const LedgerEntry = T.Union([
  /** The day's charges, summed. */
  T.Object({ kind: T.Literal("charges"), day: T.String(), amount_usd: Usd, count: Count, created_at: Time }),
  /** A credit or debit: registration_credit, top_up, operator_credit, operator_debit. */
  T.Object({ kind: T.String(), amount_usd: Usd, note: Nullable(T.String()), external_ref: Nullable(T.String()), created_at: Time }),
]);
export type LedgerEntry = Static<typeof LedgerEntry>;
export const LedgerPage = PageOf(LedgerEntry, "a cursor");
export type LedgerPage = Static<typeof LedgerPage>;

const Tokens = Nullable(Count);
export const RequestRow = T.Object({
  request_id: T.String(),
  created_at: Time,
  key_id: Nullable(T.Integer()),
  key_prefix: Nullable(T.String()),
  key_name: Nullable(T.String()),
  model: Nullable(T.String()),
  endpoint: Nullable(T.String()),
  path: T.String(),
  status: T.Integer(),
  error_code: Nullable(T.String()),
  input_tokens: Tokens,
  output_tokens: Tokens,
  cache_read_tokens: Tokens,
  cache_write_tokens: Tokens,
  cache_write_1h_tokens: Tokens,
  web_searches: Tokens,
  service_tier: Nullable(T.String()),
  /** The region Anthropic pinned inference to (billed at its premium); null when global. */
  inference_geo: Nullable(T.String()),
  images: Tokens,
  image_input_tokens: Tokens,
  image_output_tokens: Tokens,
  cost_usd: Usd,
  latency_ms: Nullable(T.Integer()),
  stream: T.Boolean(),
  /** Upstream attempts made (a fallback adds one); 0 when refused before any. */
  attempts: T.Integer(),
});
export type RequestRow = Static<typeof RequestRow>;
export const RequestPage = PageOf(RequestRow, "a request id");
export type RequestPage = Static<typeof RequestPage>;

export const DailyUsage = T.Object({
  object: T.Literal("usage"),
  by: T.Union([T.Literal("key"), T.Literal("model")]),
  /** The UTC days, oldest first; each series has one amount per day. */
  days: T.Array(T.String()),
  series: T.Array(T.Object({ id: T.Union([T.String(), T.Integer(), T.Null()]), label: T.String(), cost_usd: T.Array(Usd) })),
  total_usd: T.Array(Usd),
});
export type DailyUsage = Static<typeof DailyUsage>;

/** One model's or key's spend per day of a summary's period, with its total. */
export const SpendSeries = T.Object({ id: T.Union([T.String(), T.Integer(), T.Null()]), label: T.String(), cost_usd: T.Array(Usd), total_usd: Usd });
export type SpendSeries = Static<typeof SpendSeries>;

const Day = T.String({ pattern: "^\\d{4}-\\d{2}-\\d{2}$" });

export const UsageSummary = T.Object({
  object: T.Literal("usage_summary"),
  /** The period's first and last UTC day, both included. */
  from: Day,
  to: Day,
  /** Fixed periods that end today (UTC), under the model and key filters but not the period. */
  spend: T.Object({ today_usd: Usd, last_7_days_usd: Usd, this_month_usd: Usd }),
  period: T.Object({ cost_usd: Usd, requests: Count, cache_read_tokens: Count, cache_write_tokens: Count, cache_saved_usd: Usd }),
  days: T.Array(Day),
  by_model: T.Array(SpendSeries),
  by_key: T.Array(SpendSeries),
});
export type UsageSummary = Static<typeof UsageSummary>;

// Top-ups.

export const TopUpView = T.Object({
  id: T.String(),
  amount_usd: Usd,
  status: T.Union([T.Literal("pending"), T.Literal("credited")]),
  created_at: Time,
  credited_at: Nullable(Time),
});
export type TopUpView = Static<typeof TopUpView>;
export const TopUps = T.Object({
  object: T.Literal("topups"),
  enabled: T.Boolean(),
  minimum_usd: Usd,
  /** Whom to ask for credit (`[dashboard] support_contact`): an email or a URL; null when not set. */
  support_contact: T.Union([T.String(), T.Null()]),
  data: T.Array(TopUpView),
});
export type TopUps = Static<typeof TopUps>;
/** POST /api/topups: the Checkout Session to send the browser to. */
export const CheckoutOpened = T.Object({ object: T.Literal("topup"), id: T.String(), url: T.String(), amount_usd: Usd });
export type CheckoutOpened = Static<typeof CheckoutOpened>;
/** POST /api/stripe/webhook: what the event did; `ignored` says why it credited nothing. */
export const WebhookReceived = T.Union([
  T.Object({ received: T.Literal(true), credited: T.Literal(true), session: T.String() }),
  T.Object({ received: T.Literal(true), credited: T.Literal(false), session: Nullable(T.String()), ignored: T.String() }),
]);
export type WebhookReceived = Static<typeof WebhookReceived>;

// The operator's (docs/dashboard.md#admin).

export const AdminAccount = T.Object({
  ...ACCOUNT_WHO,
  disabled: T.Boolean(),
  /** Whether its logins ask for a second factor (`gateway account update --reset-2fa` removes it). */
  two_factor: T.Boolean(),
  /** Closed by its holder (docs/dashboard.md#closing-the-account): final; its email is anonymised. */
  closed: T.Boolean(),
  ...ACCOUNT_MONEY,
  keys: Count,
  spent_month_usd: Usd,
  last_activity_at: Nullable(Time),
  created_at: Time,
});
export type AdminAccount = Static<typeof AdminAccount>;
/** A page of the account search (GET /api/admin/accounts?q=): `total` accounts match in all. */
export const AdminAccountList = T.Composite([ListOf(AdminAccount), T.Object({ total: Count, offset: Count })]);
export type AdminAccountList = Static<typeof AdminAccountList>;
/** The operator's note on an account; null fields while it has none. */
export const AdminNote = T.Object({ note: Nullable(T.String()), updated_at: Nullable(Time), updated_by: Nullable(T.String({ description: "the admin's email" })) });
export type AdminNote = Static<typeof AdminNote>;
/** One account's page (GET /api/admin/accounts/{id}): its money, keys, newest requests and ledger, and the note. */
export const AdminAccountDetail = T.Object({
  account: AdminAccount,
  note: AdminNote,
  keys: T.Array(KeyView),
  requests: T.Array(RequestRow),
  ledger: T.Array(LedgerEntry),
});
export type AdminAccountDetail = Static<typeof AdminAccountDetail>;
/** Requests, failures (status 400 to 599), their share and the spend of a slice of the request log. */
const TotalsCell = T.Object({ requests: Count, failed: Count, error_rate: T.Number({ minimum: 0, maximum: 1 }), spend_usd: Usd });
export type TotalsCell = Static<typeof TotalsCell>;
const TotalsOf = { today: TotalsCell, month: TotalsCell };
/** The gateway's totals (GET /api/admin/totals): today and this month in UTC, per model and per route's provider. */
export const AdminTotals = T.Object({
  day_start: Time,
  month_start: Time,
  today: TotalsCell,
  month: TotalsCell,
  by_model: T.Array(T.Object({ model: Nullable(T.String()), ...TotalsOf })),
  by_provider: T.Array(T.Object({ provider: Nullable(T.String({ description: "null: refused before a route was picked" })), ...TotalsOf })),
});
export type AdminTotals = Static<typeof AdminTotals>;
export const PauseState = T.Object({ paused: T.Boolean() });
export type PauseState = Static<typeof PauseState>;

/** One key of a route's provider: by its index in api_keys and the start of its SHA-256, never the key. */
export const ProviderKeyState = T.Object({
  index: Count,
  fingerprint: Nullable(T.String()),
  in_flight: Count,
  state: T.Union([T.Literal("ready"), T.Literal("resting")]),
  resting_until: Nullable(Time),
  /** Times the upstream answered it with an overload (429, 529, overloaded_error) since the start. */
  rests: Count,
});

/** A route's health and its circuit breaker (`provider/upstream model`). */
export const RouteHealth = T.Object({
  route: T.String(),
  state: T.Union([T.Literal("healthy"), T.Literal("failing"), T.Literal("open")]),
  consecutive_failures: Count,
  successes: Count,
  failures: Count,
  last_error: Nullable(T.String()),
  last_failure_at: Nullable(Time),
  last_success_at: Nullable(Time),
  /** Its share among the model's weighted routes; null: a fallback, tried in order after them. */
  weight: Nullable(Count),
  /** Every key of its provider rests until then (the first to wake); null while one is ready. */
  resting_until: Nullable(Time),
  keys: T.Array(ProviderKeyState),
});
/** A running instance on PostgreSQL (the `instances` table) and the holds of its requests in flight. */
/** An instance's last reload of its own config file (SIGHUP, POST /reload, or `gateway reload` of the fleet). */
export const InstanceReload = T.Object({
  at: Time,
  reloaded: T.Boolean(),
  /** The refused file's one-line reason; null when applied. */
  error: Nullable(T.String()),
  catalog_version: Nullable(T.String()),
  needs_restart: T.Array(T.String()),
});
export const InstanceRow = T.Object({ id: T.String(), heartbeat_at: Time, holds: Count, held_usd: T.Number(), last_reload: Nullable(InstanceReload) });
export const AdminStatus = T.Object({
  paused: T.Boolean(),
  /** The `[cluster] instance_id` of the instance that answered (its routes' health is its own); null on SQLite. */
  instance: Nullable(T.String()),
  /** Every instance heartbeating on the shared database; empty on SQLite. */
  instances: T.Array(InstanceRow),
  routes: T.Array(T.Object({ id: T.String(), routes: T.Array(RouteHealth) })),
});
export type AdminStatus = Static<typeof AdminStatus>;

export const AuditRow = T.Object({
  /** Null once the account is gone, or for the CLI's actions. */
  actor_email: Nullable(T.String()),
  action: T.String(),
  target: Nullable(T.String()),
  detail: Nullable(T.String()),
  created_at: Time,
});
export type AuditRow = Static<typeof AuditRow>;
export const AuditList = ListOf(AuditRow);
export type AuditList = Static<typeof AuditList>;

// The public prices (docs/pricing.md).

/** Each token class in USD per 1M tokens; web_search per 1,000 searches. */
const PriceFields = { input: Usd, output: Usd, cache_read: Usd, cache_write: Usd, cache_write_1h: Usd, web_search: Usd };
export const PriceTable = T.Object(PriceFields);
export type PriceTable = Static<typeof PriceTable>;
const Optionally = <P extends Record<string, TSchema>>(p: P) => T.Partial(T.Object(p)).properties;

/** Long-context tiers, lowest threshold first: the prices of a request whose prompt is above `above_input_tokens`. */
const PricingTiers = T.Optional(T.Array(T.Composite([T.Object({ above_input_tokens: Count }), PriceTable])));
/** A service tier's prices, and its long-context tiers stacked on them as billed (docs/pricing.md#service-and-long-context-tiers). */
const ServiceTable = T.Composite([PriceTable, T.Object({ pricing_tiers: PricingTiers })]);

/**
 * One model's prices. A text model: `unit` and every token class, its long-context tiers and service
 * tiers when configured. An image model: `per_image`, and when billed by the upstream's usage its
 * token prices (`input`, `image_input`, `image_output`, `output`).
 */
export const PricedModel = T.Object({
  id: T.String(),
  aliases: T.Array(T.String()),
  endpoints: T.Array(T.String()),
  currency: T.Literal("USD"),
  unit: T.Optional(T.Literal("per 1M tokens")),
  ...Optionally(PriceFields),
  pricing_tiers: PricingTiers,
  service_tiers: T.Optional(T.Record(T.String(), ServiceTable)),
  per_image: T.Optional(Usd),
  image_input: T.Optional(Usd),
  image_output: T.Optional(Usd),
});
export type PricedModel = Static<typeof PricedModel>;
export const Pricing = T.Object({
  catalog_version: T.String(),
  currency: T.Literal("USD"),
  minimum_top_up_usd: Usd,
  starting_balance_usd: Usd,
  models: T.Array(PricedModel),
});
export type Pricing = Static<typeof Pricing>;

/** A row's success: its status, body type and schema (a CSV file is a string). */
export interface Answer {
  status: 200 | 201 | 202;
  type: "application/json" | "text/csv" | "text/html";
  schema: TSchema;
}
export const ok = (schema: TSchema): Answer => ({ status: 200, type: "application/json", schema });
export const created = (schema: TSchema): Answer => ({ status: 201, type: "application/json", schema });
/** Taken, its work done off the request (an answer that must not depend on what the work finds). */
export const accepted = (schema: TSchema): Answer => ({ status: 202, type: "application/json", schema });
export const htmlPage: Answer = { status: 200, type: "text/html", schema: T.String({ description: "A printable HTML page" }) };
export const csvFile: Answer = { status: 200, type: "text/csv", schema: T.String({ description: "CSV with a header row" }) };

/** A batch of redemption codes and its use (GET /api/admin/codes); the codes themselves are never listed. */
export const CodeBatch = T.Object({
  id: T.Integer(),
  usd: Usd,
  count: T.Integer(),
  used: T.Integer(),
  unused: T.Integer(),
  note: T.Union([T.String(), T.Null()]),
  expires_at: T.Union([T.String(), T.Null()]),
  expired: T.Boolean(),
  created_at: T.String(),
});
export type CodeBatch = Static<typeof CodeBatch>;

export const CodeBatchList = T.Object({ object: T.Literal("list"), data: T.Array(CodeBatch) });
export type CodeBatchList = Static<typeof CodeBatchList>;

/** POST /api/admin/codes: the batch and its codes, shown in this answer only. */
export const NewCodeBatch = T.Composite([T.Object({ object: T.Literal("code_batch") }), CodeBatch, T.Object({ codes: T.Array(T.String()) })]);
export type NewCodeBatch = Static<typeof NewCodeBatch>;

/** POST /api/redeem: the account after the credit, and the code's value. */
export const Redeemed = T.Composite([AccountView, T.Object({ redeemed_usd: Usd })]);
export type Redeemed = Static<typeof Redeemed>;
