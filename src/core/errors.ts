// The one error type of the gateway. Any layer throws it; only src/http/errors.ts turns it into a response.

export type ErrorCode =
  | "invalid_request"
  | "unsupported_content_type"
  | "model_protocol_mismatch"
  | "no-key"
  | "insufficient_balance"
  | "model"
  | "inactive"
  | "expired"
  | "ip"
  | "model_not_found"
  | "endpoint_not_found"
  | "method_not_allowed"
  | "idempotency_conflict"
  | "request_too_large"
  | "rate_limit"
  | "rate_limit_unavailable"
  | "quota"
  | "upstream_unavailable"
  | "ambiguous_upstream_result"
  | "product_paused"
  | "no_eligible_route"
  | "database_unavailable"
  | "internal_error"
  // The dashboard's /api/ routes (docs/dashboard.md).
  | "no-session"
  | "invalid_credentials"
  | "origin"
  | "registration_closed"
  | "key_not_found"
  | "key_limit"
  | "unsupported_media_type"
  // Top-ups (docs/dashboard.md, Top-ups).
  | "payments_not_configured"
  | "invalid_signature"
  | "payment_mismatch"
  | "admin"
  | "account_not_found"
  // Redemption codes (docs/dashboard.md#redemption-codes).
  | "code_invalid"
  | "code_expired"
  | "code_required"
  // Address verification under [email] (docs/dashboard.md#address-verification).
  | "invalid_verification"
  | "already_verified"
  // Two-factor login (docs/dashboard.md#two-factor-login).
  | "invalid_second_factor"
  | "second_factor_expired"
  | "two_factor_conflict"
  // Password reset and change of email (docs/dashboard.md#password-reset, #change-of-email).
  | "email_not_configured"
  | "invalid_reset_token"
  | "invalid_email_change"
  // Closing an account and its receipts (docs/dashboard.md#closing-the-account, #receipts).
  | "requests_in_flight"
  | "balance_not_forfeited"
  | "admin_account"
  | "account_closed"
  | "topup_not_found";

// error.type decides retry or not (docs/api.md#retry-rules). Gateway errors carry type = code; the key
// refusals share the vendors' class names so SDK users see familiar types. `kept`: the answer stays
// under its Idempotency-Key, so a retry with the key replays it instead of running again.
const TABLE: Record<ErrorCode, { status: number; type: string; kept?: true }> = {
  invalid_request: { status: 400, type: "invalid_request" },
  unsupported_content_type: { status: 400, type: "unsupported_content_type" },
  model_protocol_mismatch: { status: 400, type: "model_protocol_mismatch" },
  "no-key": { status: 401, type: "authentication_error" },
  insufficient_balance: { status: 402, type: "insufficient_balance" },
  model: { status: 403, type: "permission_error" },
  inactive: { status: 403, type: "permission_error" },
  expired: { status: 403, type: "permission_error" },
  ip: { status: 403, type: "permission_error" },
  model_not_found: { status: 404, type: "model_not_found" },
  endpoint_not_found: { status: 404, type: "endpoint_not_found" },
  method_not_allowed: { status: 405, type: "method_not_allowed" },
  idempotency_conflict: { status: 409, type: "idempotency_conflict" },
  request_too_large: { status: 413, type: "request_too_large" },
  rate_limit: { status: 429, type: "rate_limit" },
  quota: { status: 429, type: "insufficient_quota" },
  upstream_unavailable: { status: 502, type: "upstream_unavailable" },
  // docs/api.md#retry-rules, rule 4: a media request the provider may have accepted; not retried automatically.
  ambiguous_upstream_result: { status: 502, type: "ambiguous_upstream_result", kept: true },
  product_paused: { status: 503, type: "product_paused" },
  no_eligible_route: { status: 503, type: "no_eligible_route" },
  // A full disk or a read-only file is the gateway's availability, so 5xx, and 503 with
  // Retry-After because it clears without the client changing anything.
  database_unavailable: { status: 503, type: "database_unavailable" },
  // The shared rate limit store (`[limits] store`) did not answer, so the request could not be
  // counted and is refused rather than let through unlimited. Its type is rate_limit, one the retry
  // rules name as safe to retry (docs/api.md#retry-rules): nothing ran, nothing was charged.
  rate_limit_unavailable: { status: 503, type: "rate_limit" },
  internal_error: { status: 500, type: "internal_error" },
  // The dashboard's /api/ (docs/dashboard.md#errors-of-api): its refusals of who is asking share
  // the classes of the key refusals (authentication_error, permission_error); the rest have type = code.
  "no-session": { status: 401, type: "authentication_error" },
  invalid_credentials: { status: 401, type: "authentication_error" },
  origin: { status: 403, type: "permission_error" },
  registration_closed: { status: 403, type: "permission_error" },
  key_not_found: { status: 404, type: "key_not_found" },
  // `[dashboard] max_keys_per_account`: the request is sound, the account's state refuses it (409,
  // as a conflict with what exists); the same answer comes back until a key is revoked.
  key_limit: { status: 409, type: "key_limit" },
  unsupported_media_type: { status: 415, type: "unsupported_media_type" },
  // Top-ups: no [payments.stripe] (the operator credits balances); a webhook Stripe did not sign, or
  // signed too long ago; a paid session whose amount or currency is not the one the gateway asked for.
  payments_not_configured: { status: 404, type: "payments_not_configured" },
  invalid_signature: { status: 400, type: "invalid_signature" },
  payment_mismatch: { status: 400, type: "payment_mismatch" },
  // The operator's routes under /api/admin/ refuse a session of an account not marked admin.
  admin: { status: 403, type: "permission_error" },
  account_not_found: { status: 404, type: "account_not_found" },
  // A redemption code: an unknown one and a used one get the same answer, so that a guess learns
  // nothing; an expired one says so (it is worth nothing to a guesser). `[dashboard] registration =
  // "invite"` refuses a registration without a code.
  code_invalid: { status: 400, type: "code_invalid" },
  code_expired: { status: 400, type: "code_expired" },
  code_required: { status: 400, type: "code_required" },
  // A verification link unknown, used, replaced by a newer one, or past its 24 h: nothing changes.
  invalid_verification: { status: 400, type: "invalid_verification" },
  // A resend for an account with no pending verification.
  already_verified: { status: 409, type: "already_verified" },
  // A wrong or spent TOTP or recovery code, and a login's pending token unknown, used or past its 5
  // minutes: refusals of who is asking, as a wrong password is.
  invalid_second_factor: { status: 401, type: "authentication_error" },
  second_factor_expired: { status: 401, type: "authentication_error" },
  // A setup while two-factor login is on, an enable with no setup pending, a disable while it is off.
  two_factor_conflict: { status: 409, type: "two_factor_conflict" },
  // A reset asked of a gateway without [email]: it has no way to reach the holder (the operator sets passwords).
  email_not_configured: { status: 404, type: "email_not_configured" },
  // A reset or change-of-email link unknown, used, replaced by a newer one or expired: nothing changes.
  invalid_reset_token: { status: 400, type: "invalid_reset_token" },
  invalid_email_change: { status: 400, type: "invalid_email_change" },
  // A closure the account's state refuses, until it changes: running requests still hold money; the
  // balance the holder confirmed is not the balance; an admin's mark is still on (the operator takes it
  // off first, so a gateway never loses its last admin to a click). An operator's action on an account
  // its holder closed: closure is final.
  requests_in_flight: { status: 409, type: "requests_in_flight" },
  balance_not_forfeited: { status: 409, type: "balance_not_forfeited" },
  admin_account: { status: 409, type: "admin_account" },
  account_closed: { status: 409, type: "account_closed" },
  // A receipt of a top-up that is not the session's account's, not credited, or not there: one answer.
  topup_not_found: { status: 404, type: "topup_not_found" },
};

// The only types a client may retry (docs/api.md#retry-rules, 1). The official SDKs retry 408, 409,
// 429 and every 5xx unless the answer says `x-should-retry: false`: without it the openai SDK sent a
// media request the provider may have run (502 ambiguous_upstream_result) three times.
// database_unavailable is the gateway's own type, outside that list: nothing was charged and it
// clears without the client changing anything (it carries Retry-After), so the SDKs may retry it.
const SAFE_TO_RETRY = new Set(["upstream_unavailable", "rate_limit", "product_paused", "database_unavailable"]);
const SDK_RETRIES = (status: number) => status === 408 || status === 409 || status === 429 || status >= 500;

export interface ErrorOptions {
  retryAfter?: number;
  /** Extra response headers (allow on 405, x-should-retry, …). */
  headers?: Record<string, string>;
  /** What was thrown underneath, for the operator's event log (never sent to the client). */
  cause?: unknown;
}

export class GatewayError extends Error {
  readonly status: number;
  readonly type: string;
  readonly code: string;
  readonly retryAfter?: number;
  readonly headers: Record<string, string>;
  /** The answer stays under the request's Idempotency-Key (a retry replays it, never runs again). */
  readonly kept: boolean;

  constructor(code: ErrorCode, message: string, opts: ErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    const row = TABLE[code];
    this.status = row.status;
    this.type = row.type;
    this.code = code;
    this.retryAfter = opts.retryAfter;
    this.kept = row.kept === true;
    this.headers = SDK_RETRIES(row.status) && !SAFE_TO_RETRY.has(row.type) ? { "x-should-retry": "false", ...opts.headers } : (opts.headers ?? {});
  }

  /** A vendor's own error passed through: its status, type and text, in the gateway's shape. */
  static upstream(status: number, type: string, code: string, message: string, headers: Record<string, string> = {}, retryAfter?: number): GatewayError {
    const e = new GatewayError("upstream_unavailable", message, { headers, retryAfter });
    Object.assign(e, { status, type, code });
    return e;
  }
}

export const modelNotFound = (model: string) =>
  new GatewayError("model_not_found", `The model '${model}' does not exist or you do not have access to it.`);

export const invalidRequest = (message: string) => new GatewayError("invalid_request", message);

// SQLite result codes that mean the database cannot be written now, through no fault of the request:
// full disk (SQLITE_FULL), read-only file or mount (SQLITE_READONLY_*), I/O failure, a lock held past
// busy_timeout, a file that cannot be opened, a write batch SQLite rolled back for one of these
// (SQLITE_ABORT_ROLLBACK, store/commits/sqlite.ts). They clear by themselves or by the operator's hand.
// On PostgreSQL: the connection refused, lost or timed out (Bun's client codes), or the server's
// SQLSTATE classes 08 (connection), 53 (out of disk, memory, connections), 57P (shut down by its
// operator) and 25006 (a read-only server, a standby promoted to nothing).
const UNAVAILABLE = /^(SQLITE_(FULL|READONLY|IOERR|BUSY|CANTOPEN|ABORT)(_|$)|ERR_POSTGRES_(CONNECTION|IDLE|LIFETIME|TLS))/;
const PG_UNAVAILABLE_STATE = /^(08|53|57P|25006)/;

/** The SQLite code when `err` says the database is unavailable (not a bug, not the request's fault), else null. */
export function databaseUnavailableCode(err: unknown): string | null {
  const { code, errno } = (err ?? {}) as { code?: unknown; errno?: unknown };
  if (typeof code === "string" && UNAVAILABLE.test(code)) return code;
  return typeof errno === "string" && PG_UNAVAILABLE_STATE.test(errno) ? `SQLSTATE_${errno}` : null;
}

export const DATABASE_RETRY_AFTER_S = 10;

/** 503 database_unavailable: nothing was charged, and retrying later is safe. */
export const databaseUnavailable = (cause?: unknown) =>
  new GatewayError(
    "database_unavailable",
    "The gateway cannot record requests right now (its database is unreachable, full or read-only). The request was not charged; retry later.",
    { retryAfter: DATABASE_RETRY_AFTER_S, cause },
  );

/** Any thrown value as the gateway's error: unavailable database → 503 database_unavailable, anything else → 500. */
export function asGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  if (databaseUnavailableCode(err)) return databaseUnavailable(err);
  return new GatewayError("internal_error", "The gateway hit an unexpected error. Report the request id to the operator.", { cause: err });
}
