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
  | "quota"
  | "upstream_unavailable"
  | "product_paused"
  | "no_eligible_route"
  | "internal_error";

// error.type decides retry or not (spec: Errors). Gateway errors carry type = code; the key
// refusals share the vendors' class names so SDK users see familiar types.
const TABLE: Record<ErrorCode, { status: number; type: string }> = {
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
  product_paused: { status: 503, type: "product_paused" },
  no_eligible_route: { status: 503, type: "no_eligible_route" },
  internal_error: { status: 500, type: "internal_error" },
};

export interface ErrorOptions {
  retryAfter?: number;
  /** Extra response headers (allow on 405, x-should-retry, …). */
  headers?: Record<string, string>;
}

export class GatewayError extends Error {
  readonly status: number;
  readonly type: string;
  readonly code: string;
  readonly retryAfter?: number;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message: string, opts: ErrorOptions = {}) {
    super(message);
    const row = TABLE[code];
    this.status = row.status;
    this.type = row.type;
    this.code = code;
    this.retryAfter = opts.retryAfter;
    this.headers = opts.headers ?? {};
  }

  /** A vendor's own error passed through: its status, type and text, in the gateway's shape. */
  static upstream(status: number, type: string, code: string, message: string, headers: Record<string, string> = {}): GatewayError {
    const e = new GatewayError("upstream_unavailable", message, { headers });
    Object.assign(e, { status, type, code });
    return e;
  }
}

export const modelNotFound = (model: string) =>
  new GatewayError("model_not_found", `The model '${model}' does not exist or you do not have access to it.`);

export const invalidRequest = (message: string) => new GatewayError("invalid_request", message);
