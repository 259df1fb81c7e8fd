import type { TSchema } from "@sinclair/typebox";
import type { Config } from "../config/load.ts";
import { GatewayError } from "../core/errors.ts";
import { serveImages } from "../relay/images.ts";
import { serveResponses } from "../relay/responses.ts";
import { serveText } from "../relay/text.ts";
import { countTokens, me } from "./handlers/v1-account.ts";
import type { SessionCall } from "./session-guard.ts";
import { createKey, KeyBody, listKeys, revokeKey, updateKey } from "./handlers/dashboard-keys.ts";
import { adminStatus, CreditBody, creditAccount, DebitBody, debitAccountRoute, disableAccount, enableAccount, listAdminAccounts, listAudit, pauseProduct, resumeProduct } from "./handlers/dashboard-admin.ts";
import { createAdminAccount, createKeyFor, getAdminAccount, NewAccountBody, NoteBody, PasswordBody, putNote, revokeKeyOf, setPasswordOf } from "./handlers/dashboard-admin-account.ts";
import { getTotals } from "./handlers/dashboard-admin-totals.ts";
import { getDailyUsage, getLedger, getLedgerCsv, getRequests, getRequestsCsv } from "./handlers/dashboard-usage.ts";
import { getUsageSummary } from "./handlers/dashboard-summary.ts";
import { createTopUp, getReceipt, listTopUps, stripeWebhook, TopUpBody } from "./handlers/dashboard-topups.ts";
import { Credentials, Registration, getMe, getSession, login, LowBalance, logout, logoutAll, newPassword, PasswordChange, putLowBalance, register } from "./handlers/dashboard-account.ts";
import { disableTwoFactor, enableTwoFactor, loginSecondFactor, SecondFactorBody, setupTwoFactor, TwoFactorBody } from "./handlers/dashboard-two-factor.ts";
import { closeAccount, CloseBody } from "./handlers/dashboard-close.ts";
import { CodeBatchBody, createCodeBatch, listCodeBatches, redeem, RedeemBody } from "./handlers/dashboard-codes.ts";
import { resendVerification, verify, VerifyBody } from "./handlers/dashboard-verify.ts";
import { confirmEmailChange, EmailChangeBody, EmailConfirmBody, ForgotBody, forgotPassword, requestEmailChange, ResetBody, resetPassword } from "./handlers/dashboard-recovery.ts";
import type { EndpointTraits, KeyedCall, OpenCall } from "./exchange.ts";
import { healthz, metrics, readyz, reload } from "./handlers/operator.ts";
import { getModel, listModels, pricing, status } from "./handlers/public.ts";
import { ChatBody, CountTokensBody, ImageEditForm, ImageGenerationBody, MessagesBody, ResponsesBody } from "./schemas.ts";
import * as A from "./api-schemas.ts";

// The endpoints as data, one row per method and path. Everything else reads this table: Elysia's
// routes and the OpenAPI document (app.ts, openapi.ts), the answers to unknown paths, other methods,
// HEAD, OPTIONS and CORS (below and app.ts), the metrics labels (server.ts).

/**
 * What a handler is given, by how its caller is known. Each kind has its runner in app.ts: a new
 * kind (the dashboard's browser session) is one entry here, one runner there, and its rows.
 */
export interface Calls {
  /** No credential. */
  public: OpenCall;
  /** An API key, with its limits and the body checked first (pipeline.ts). */
  key: KeyedCall;
  /** The operator's scraper: callers on this machine, or the [server] metrics token (operator-guard.ts). */
  operator: OpenCall;
  /** The dashboard's browser session, required (session-guard.ts): no API key, Origin and JSON rules on writes. */
  session: SessionCall;
  /** The same rules with the session optional: registering, logging in and out. */
  visitor: SessionCall;
}
export type AuthKind = keyof Calls;

interface Row<A extends AuthKind> extends EndpointTraits {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** `{name}` marks a path parameter. */
  path: string;
  auth: A;
  body: "json" | "multipart" | "none";
  /** The body's shape: a JSON body is checked against it before the handler runs; the OpenAPI document shows it. */
  schema: TSchema | null;
  /** The key's token bucket a request takes (limits/rate-limit.ts). */
  bucket: "main" | "count_tokens";
  /** Its request holds money (a generation): an account with nothing to spend cannot pass it (pipeline.ts). */
  paid: boolean;
  /** Registered only while this holds for the running config, otherwise the path is unknown: for the operator's rows (the lookups below do not ask it). */
  when: ((config: Config) => boolean) | null;
  /** The success's status and body schema (api-schemas.ts), for the OpenAPI document; null: a key route's, described there. */
  response: A.Answer | null;
  /** The OpenAPI document's summary; `streams` when the answer may be SSE. */
  summary: string;
  streams: boolean;
  handler: (call: Calls[A]) => Response | Promise<Response>;
}

export type Endpoint<A extends AuthKind = AuthKind> = A extends AuthKind ? Row<A> : never;

type Given<A extends AuthKind> = Pick<Row<A>, "method" | "path" | "auth" | "summary" | "handler">;

/** A row, with what it leaves out at its default: no CORS, the standard envelope, no body, the main bucket, published. */
function row<A extends AuthKind>(r: Given<A> & Partial<Row<A>>): Endpoint<A> {
  return {
    cors: false,
    envelope: "standard",
    body: "none",
    schema: null,
    response: null,
    bucket: "main",
    paid: false,
    published: true,
    dashboard: r.auth === "session" || r.auth === "visitor",
    quiet: false,
    when: null,
    streams: false,
    ...r,
    pattern: r.pattern ?? new RegExp(`^${r.path.replace(/\{(\w+)\}/g, "(?<$1>[^/]+)")}/?$`),
  } as Row<A> as Endpoint<A>;
}

export const ENDPOINTS: readonly Endpoint[] = [
  // The four public GETs carry CORS `*` (docs/api.md#cors): browsers may call them.
  row({ method: "GET", path: "/status", auth: "public", cors: true, summary: "Gateway status and each model's availability", handler: status }),
  row({ method: "GET", path: "/v1/models", auth: "public", cors: true, summary: "Published models", handler: listModels }),
  // A model id may hold a slash (org/model): sent as is rather than as %2F, it is still the id.
  row({ method: "GET", path: "/v1/models/{id}", pattern: /^\/v1\/models\/(?<id>.+?)\/?$/, auth: "public", cors: true, summary: "One model (an alias answers with the canonical id)", handler: getModel }),
  row({ method: "GET", path: "/api/pricing", auth: "public", cors: true, response: A.ok(A.Pricing), summary: "Public prices and the catalog version", handler: pricing }),
  // The Messages dialect's endpoints answer errors in Anthropic's envelope (errors.ts).
  row({
    method: "POST", path: "/v1/messages", auth: "key", paid: true, envelope: "messages", body: "json", schema: MessagesBody, streams: true,
    summary: "Messages dialect (Anthropic SDK base URL without /v1)", handler: (c) => serveText(c, "messages", c.json),
  }),
  row({
    // The limit of /v1/messages, whose body it counts (docs/api.md#limits): what may be sent may be counted first.
    method: "POST", path: "/v1/messages/count_tokens", auth: "key", envelope: "messages", body: "json", schema: CountTokensBody, bucket: "count_tokens",
    summary: "Token estimate; free, 60 per minute per key", handler: countTokens,
  }),
  row({
    method: "POST", path: "/v1/chat/completions", auth: "key", paid: true, body: "json", schema: ChatBody, streams: true,
    summary: "Chat Completions dialect", handler: (c) => serveText(c, "chat", c.json),
  }),
  row({
    method: "POST", path: "/v1/responses", auth: "key", paid: true, body: "json", schema: ResponsesBody, streams: true,
    summary: "Responses dialect, on top of chat completions", handler: serveResponses,
  }),
  row({
    method: "POST", path: "/v1/images/generations", auth: "key", paid: true, body: "json", schema: ImageGenerationBody,
    summary: "Generate images", handler: (c) => serveImages(c, "images.generations"),
  }),
  // The form's fields are checked as relay/images.ts reads them; the schema is the document's.
  row({
    method: "POST", path: "/v1/images/edits", auth: "key", paid: true, body: "multipart", schema: ImageEditForm,
    summary: "Edit or combine up to 4 images", handler: (c) => serveImages(c, "images.edits"),
  }),
  row({ method: "GET", path: "/v1/me", auth: "key", summary: "The key's quota, the balance and the limits", handler: me }),
  // The dashboard's endpoints (docs/dashboard.md): a browser session, never an API key; not the model API.
  row({ method: "POST", path: "/api/register", auth: "visitor", body: "json", schema: Registration, response: A.created(A.Registered), summary: "Register: an account with the starting credit, logged in", handler: register }),
  row({ method: "POST", path: "/api/login", auth: "visitor", body: "json", schema: Credentials, response: A.ok(A.LoginAnswer), summary: "Log in (with two-factor login on: a token for the code's step, no session yet)", handler: login }),
  row({ method: "POST", path: "/api/login/second-factor", auth: "visitor", body: "json", schema: SecondFactorBody, response: A.ok(A.AccountView), summary: "Log in, second step: the login's token with a TOTP or recovery code", handler: loginSecondFactor }),
  row({ method: "POST", path: "/api/logout", auth: "visitor", response: A.ok(A.LoggedOut), summary: "Log out this browser", handler: logout }),
  row({ method: "POST", path: "/api/logout-all", auth: "session", response: A.ok(A.LoggedOutAll), summary: "Log out every session of the account", handler: logoutAll }),
  row({ method: "POST", path: "/api/password", auth: "session", body: "json", schema: PasswordChange, response: A.ok(A.PasswordChanged), summary: "Change the password; other sessions end", handler: newPassword }),
  row({ method: "POST", path: "/api/password/forgot", auth: "visitor", body: "json", schema: ForgotBody, response: A.accepted(A.ResetRequested), summary: "Email a password reset link, if an account has the address: the same answer either way", handler: forgotPassword }),
  row({ method: "POST", path: "/api/password/reset", auth: "visitor", body: "json", schema: ResetBody, response: A.ok(A.PasswordReset), summary: "Set a new password with the emailed link's token; every session ends", handler: resetPassword }),
  row({ method: "POST", path: "/api/me/email", auth: "session", body: "json", schema: EmailChangeBody, response: A.ok(A.EmailChange), summary: "Change the address: a confirmation link to the new one (at once without [email])", handler: requestEmailChange }),
  row({ method: "POST", path: "/api/me/email/confirm", auth: "visitor", body: "json", schema: EmailConfirmBody, response: A.ok(A.EmailChange), summary: "Confirm a change of address with the emailed link's token", handler: confirmEmailChange }),
  row({ method: "POST", path: "/api/verify", auth: "visitor", body: "json", schema: VerifyBody, response: A.ok(A.Verified), summary: "Verify the address with the emailed link's token: the starting credit, once", handler: verify }),
  row({ method: "POST", path: "/api/verify/resend", auth: "session", response: A.ok(A.VerificationSent), summary: "Email a new verification link (at most once a minute)", handler: resendVerification }),
  row({ method: "GET", path: "/api/session", auth: "visitor", response: A.ok(A.SessionState), summary: "Whether the cookie opens a session, and its account: 200 either way", handler: getSession }),
  row({ method: "GET", path: "/api/me", auth: "session", response: A.ok(A.AccountView), summary: "The account, its balance, holds and low-balance notice", handler: getMe }),
  row({ method: "POST", path: "/api/me/2fa/setup", auth: "session", response: A.ok(A.TwoFactorSetup), summary: "Two-factor login: a new secret for an authenticator app, not yet in force", handler: setupTwoFactor }),
  row({ method: "POST", path: "/api/me/2fa/enable", auth: "session", body: "json", schema: TwoFactorBody, response: A.ok(A.TwoFactorEnabled), summary: "Two-factor login on (password and a code); recovery codes shown once; other sessions end", handler: enableTwoFactor }),
  row({ method: "POST", path: "/api/me/2fa/disable", auth: "session", body: "json", schema: TwoFactorBody, response: A.ok(A.TwoFactorDisabled), summary: "Two-factor login off (password and a code or a recovery code)", handler: disableTwoFactor }),
  row({ method: "POST", path: "/api/me/close", auth: "session", body: "json", schema: CloseBody, response: A.ok(A.AccountClosed), summary: "Close the account for good: keys revoked, sessions ended, the balance forfeited as confirmed", handler: closeAccount }),
  row({ method: "PUT", path: "/api/me/low-balance", auth: "session", body: "json", schema: LowBalance, response: A.ok(A.AccountView), summary: "The low-balance threshold", handler: putLowBalance }),
  row({ method: "GET", path: "/api/keys", auth: "session", response: A.ok(A.KeyList), summary: "The account's keys", handler: listKeys }),
  row({ method: "POST", path: "/api/keys", auth: "session", body: "json", schema: KeyBody, response: A.created(A.NewKeyView), summary: "A new key, shown once", handler: createKey }),
  row({ method: "PATCH", path: "/api/keys/{id}", auth: "session", body: "json", schema: KeyBody, response: A.ok(A.KeyView), summary: "Change a key's restrictions", handler: updateKey }),
  row({ method: "DELETE", path: "/api/keys/{id}", auth: "session", response: A.ok(A.KeyView), summary: "Revoke a key", handler: revokeKey }),
  // account-data: the holder's figures and the operator's admin routes (handlers/dashboard-usage.ts, handlers/dashboard-admin.ts).
  row({ method: "GET", path: "/api/ledger", auth: "session", response: A.ok(A.LedgerPage), summary: "The account's ledger, charges grouped per UTC day", handler: getLedger }),
  row({ method: "GET", path: "/api/ledger.csv", auth: "session", response: A.csvFile, summary: "The account's whole ledger as CSV, charges grouped per UTC day", handler: getLedgerCsv }),
  row({ method: "GET", path: "/api/requests", auth: "session", response: A.ok(A.RequestPage), summary: "The account's requests from the request log, filtered and paged", handler: getRequests }),
  row({ method: "GET", path: "/api/requests.csv", auth: "session", response: A.csvFile, summary: "The account's requests as CSV, every matching row", handler: getRequestsCsv }),
  row({ method: "GET", path: "/api/usage/daily", auth: "session", response: A.ok(A.DailyUsage), summary: "Daily spend per key or per model", handler: getDailyUsage }),
  row({ method: "GET", path: "/api/usage/summary", auth: "session", response: A.ok(A.UsageSummary), summary: "Spend today, this week and month, per day by model and key, and what caching saved", handler: getUsageSummary }),

  row({ method: "GET", path: "/api/admin/accounts", auth: "session", response: A.ok(A.AdminAccountList), summary: "Admin: accounts by email or id (q), a page at a time, and their money", handler: listAdminAccounts }),
  row({ method: "POST", path: "/api/admin/accounts", auth: "session", body: "json", schema: NewAccountBody, response: A.created(A.AdminAccount), summary: "Admin: create an account for someone", handler: createAdminAccount }),
  row({ method: "GET", path: "/api/admin/accounts/{id}", auth: "session", response: A.ok(A.AdminAccountDetail), summary: "Admin: one account's money, keys, newest requests, ledger and note", handler: getAdminAccount }),
  row({ method: "PUT", path: "/api/admin/accounts/{id}/note", auth: "session", body: "json", schema: NoteBody, response: A.ok(A.AdminNote), summary: "Admin: the operator's note on an account (empty removes it)", handler: putNote }),
  row({ method: "PUT", path: "/api/admin/accounts/{id}/password", auth: "session", body: "json", schema: PasswordBody, response: A.ok(A.PasswordChanged), summary: "Admin: set an account's dashboard password; its sessions end", handler: setPasswordOf }),
  row({ method: "POST", path: "/api/admin/accounts/{id}/keys", auth: "session", body: "json", schema: KeyBody, response: A.created(A.NewKeyView), summary: "Admin: a new key for the account, shown once", handler: createKeyFor }),
  row({ method: "DELETE", path: "/api/admin/accounts/{id}/keys/{key_id}", auth: "session", response: A.ok(A.KeyView), summary: "Admin: revoke one of the account's keys", handler: revokeKeyOf }),
  row({ method: "GET", path: "/api/admin/totals", auth: "session", response: A.ok(A.AdminTotals), summary: "Admin: spend, requests and error rate today and this month, by model and by provider", handler: getTotals }),
  row({ method: "POST", path: "/api/admin/accounts/{id}/credit", auth: "session", body: "json", schema: CreditBody, response: A.ok(A.AdminAccount), summary: "Admin: credit an account", handler: creditAccount }),
  row({ method: "POST", path: "/api/admin/accounts/{id}/debit", auth: "session", body: "json", schema: DebitBody, response: A.ok(A.AdminAccount), summary: "Admin: debit an account, with a note", handler: debitAccountRoute }),
  row({ method: "POST", path: "/api/admin/accounts/{id}/disable", auth: "session", response: A.ok(A.AdminAccount), summary: "Admin: disable an account", handler: disableAccount }),
  row({ method: "POST", path: "/api/admin/accounts/{id}/enable", auth: "session", response: A.ok(A.AdminAccount), summary: "Admin: enable an account", handler: enableAccount }),
  row({ method: "POST", path: "/api/admin/pause", auth: "session", response: A.ok(A.PauseState), summary: "Admin: pause the product", handler: pauseProduct }),
  row({ method: "POST", path: "/api/admin/resume", auth: "session", response: A.ok(A.PauseState), summary: "Admin: resume the product", handler: resumeProduct }),
  row({ method: "GET", path: "/api/admin/status", auth: "session", response: A.ok(A.AdminStatus), summary: "Admin: the pause switch and route health", handler: adminStatus }),
  row({ method: "GET", path: "/api/admin/audit", auth: "session", response: A.ok(A.AuditList), summary: "Admin: the audit log, newest first", handler: listAudit }),
  // payments: top-ups through Stripe Checkout (docs/dashboard.md, Top-ups). The webhook is Stripe's
  // call, not a browser's: no session and no Origin rule, its signature checked instead.
  row({ method: "GET", path: "/api/topups", auth: "session", response: A.ok(A.TopUps), summary: "The account's top-ups and whether card top-ups are on", handler: listTopUps }),
  row({ method: "GET", path: "/api/topups/{id}/receipt", auth: "session", response: A.htmlPage, summary: "A credited card top-up's printable receipt", handler: getReceipt }),
  row({ method: "POST", path: "/api/topups", auth: "session", body: "json", schema: TopUpBody, response: A.created(A.CheckoutOpened), summary: "A Stripe Checkout Session for a top-up", handler: createTopUp }),
  row({ method: "POST", path: "/api/redeem", auth: "session", body: "json", schema: RedeemBody, response: A.ok(A.Redeemed), summary: "Redeem a code: its value credited once", handler: redeem }),
  row({ method: "GET", path: "/api/admin/codes", auth: "session", response: A.ok(A.CodeBatchList), summary: "Admin: redemption code batches and their use", handler: listCodeBatches }),
  row({ method: "POST", path: "/api/admin/codes", auth: "session", body: "json", schema: CodeBatchBody, response: A.created(A.NewCodeBatch), summary: "Admin: mint a batch of codes, shown once", handler: createCodeBatch }),
  row({ method: "POST", path: "/api/stripe/webhook", auth: "public", dashboard: true, response: A.ok(A.WebhookReceived), summary: "Stripe's signed webhook: credits a paid top-up once", handler: stripeWebhook }),
  // The operator's paths: no request log row (a probe every few seconds would fill it), no CORS.
  row({ method: "GET", path: "/healthz", auth: "public", published: false, summary: "Liveness", handler: healthz }),
  row({ method: "GET", path: "/readyz", auth: "public", published: false, quiet: true, summary: "Readiness", handler: readyz }),
  row({
    method: "GET", path: "/metrics", auth: "operator", published: false, quiet: true, when: (c) => c.metrics.mode !== "off",
    summary: "Prometheus metrics", handler: metrics,
  }),
  // Callers on this machine only, whatever [server] metrics says (operator-guard.ts): `gateway reload`.
  row({ method: "POST", path: "/reload", auth: "operator", published: false, quiet: true, summary: "Read the config again (as SIGHUP does)", handler: reload }),
];

/** Where the OpenAPI document is served (openapi.ts). */
export const SPEC_PATH = "/openapi.json";

/**
 * GET /openapi.json, which Elysia's OpenAPI plugin serves (openapi.ts) outside the table: its row,
 * looked up but not registered, makes another method a 405 with allow as on the operator's paths.
 * `serve` answers a target that reaches it some other way (a trailing slash) with the plugin's document.
 */
export const specEndpoint = (serve: (x: OpenCall) => Response | Promise<Response>): Endpoint =>
  row({ method: "GET", path: SPEC_PATH, auth: "public", published: false, summary: "This OpenAPI document", handler: serve });

const PUBLISHED = ENDPOINTS.filter((e) => e.published);

export const CORS_HEADERS = { "access-control-allow-origin": "*" } as const;

/**
 * The endpoints `among` at a path, whatever their method (one path may take several): `among` is
 * those the running app registered, so an operator's path answers another method 405, as /v1 does,
 * and is unknown only while its row's `when` leaves it out.
 */
export const endpointsAt = (pathname: string, among: readonly Endpoint[]): Endpoint[] => among.filter((e) => e.pattern.test(pathname));

/** The published endpoint a path belongs to (`/v1/models/{id}` for `/v1/models/x`), or undefined. */
export const findEndpoint = (pathname: string): Endpoint | undefined => PUBLISHED.find((e) => e.pattern.test(pathname));

// The 404's list is the model API's (docs/api.md#rules, rule 4): the dashboard's endpoints are not part of it.
const MODEL_API = PUBLISHED.filter((e) => !e.dashboard);

export function endpointNotFound(method: string, pathname: string): GatewayError {
  const list = MODEL_API.map((e) => `${e.method} ${e.path}`).join(", ");
  return new GatewayError("endpoint_not_found", `Unknown endpoint ${method} ${pathname}. Published routes: ${list}.`);
}

/** Another method on a path whose endpoints are `at`. */
export function methodNotAllowed(method: string, at: Endpoint[]): GatewayError {
  const e = at[0]!;
  const allow = at.map((r) => r.method);
  const message =
    method === "OPTIONS" && e.auth === "key"
      ? `OPTIONS is not supported on ${e.method} ${e.path}: routes that take an API key send no CORS headers, because keys must not be used in browser code. Call this route from a server.`
      : `Method ${method} is not allowed on ${e.path}; use ${allow.join(" or ")}.`;
  return new GatewayError("method_not_allowed", message, { headers: { allow: allow.join(", ") } });
}

/** The preflight answer on a path whose endpoints (`at`) carry CORS. */
export function preflight(request: Request, at: Endpoint[]): Response {
  return new Response(null, {
    status: 204,
    headers: {
      ...CORS_HEADERS,
      "access-control-allow-methods": [...at.map((e) => e.method), "OPTIONS"].join(", "),
      "access-control-allow-headers": request.headers.get("access-control-request-headers") ?? "*",
      "access-control-max-age": "86400",
    },
  });
}
