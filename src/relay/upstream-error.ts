import { GatewayError } from "../core/errors.ts";
import { redactSecrets } from "../wire/scrub.ts";

// Vendor errors that pass through with their own texts (docs/api.md#errors), in the gateway's error shape.

interface VendorError {
  type: string;
  code: string;
  message: string;
}

/** Reads an Anthropic ({type:"error", error:{type,message}}) or OpenAI ({error:{message,type,code}}) body. */
export function readVendorError(text: string): VendorError | null {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return null;
  }
  const err = (body as { error?: unknown })?.error;
  if (!err || typeof err !== "object") return null;
  const e = err as { type?: unknown; code?: unknown; message?: unknown };
  if (typeof e.message !== "string") return null;
  const type = typeof e.type === "string" && e.type ? e.type : typeof e.code === "string" ? e.code : "upstream_error";
  const code = typeof e.code === "string" && e.code ? e.code : type;
  return { type, code, message: e.message };
}

// OpenAI marks region blocks with type request_forbidden; the gateway names the error by its code (docs/api.md#errors).
const TYPE_FROM_CODE = new Set(["unsupported_country_region_territory", "insufficient_quota"]);

/** A 429 about the provider account's credit: the same on a retry with this key. */
const outOfCredit = (v: VendorError | null) => v?.code === "insufficient_quota" || v?.type === "insufficient_quota";

/** The provider refused the gateway's credential itself: 401, or 403 with an authentication or permission error. */
export function refusesCredential(status: number, vendorType: string | undefined): boolean {
  return status === 401 || (status === 403 && (vendorType === "authentication_error" || vendorType === "permission_error"));
}

/**
 * An answer that says this key is over its limits right now, not that the request is wrong: 529,
 * an overloaded_error under any status, or a 429 that is not about the provider's credit (an
 * exhausted balance is the same on a retry, so it passes through). The key rests; another may serve.
 */
export function restsKey(status: number, v: VendorError | null): boolean {
  if (status === 529 || v?.type === "overloaded_error") return true;
  return status === 429 && !outOfCredit(v);
}

/**
 * The provider refused this key itself: revoked or wrong, or its account is out of credit (429
 * insufficient_quota). Another of the provider's keys may work.
 */
export function rejectsKey(status: number, v: VendorError | null): boolean {
  return refusesCredential(status, v?.type) || (status === 429 && outOfCredit(v));
}

/**
 * A 404 about the route itself, not the request: the provider does not know the route's upstream
 * model (retired, misspelt in the config; OpenAI's code model_not_found, Anthropic's not_found_error
 * "model: …"), or the 404 is no vendor's body at all (a base URL with a wrong path). The client asked
 * for a published model: another route may serve it, and a 404 model_not_found would tell the client
 * the model does not exist (docs/api.md#errors). A client cannot cause either, so counting them
 * against the route's health lets no one open its circuit. Other 404s pass through as refusals.
 */
export function missingRoute(status: number, v: VendorError | null): boolean {
  if (status !== 404) return false;
  return v === null || v.code === "model_not_found" || (v.type === "not_found_error" && v.message.startsWith("model:"));
}

export function passThrough(status: number, v: VendorError, retryAfter?: number): GatewayError {
  const type = TYPE_FROM_CODE.has(v.code) ? v.code : v.type;
  // A vendor 429 for an exhausted credit balance will not succeed on a retry.
  const headers: Record<string, string> = status === 429 && type === "insufficient_quota" ? { "x-should-retry": "false" } : {};
  // The vendor's own text, except a provider credential it may quote.
  return GatewayError.upstream(status, type, v.code, redactSecrets(v.message), headers, retryAfter);
}

// The 4xx statuses the vendors answer a request with: the client's (or its key's) to see. Any other
// status (a redirect, 1xx, 402, 418, …) is no vendor answer: a misconfigured or hijacked base URL,
// a proxy in the way. It is the route's failure, and a redirect is never followed with the key.
const REFUSALS = new Set([400, 401, 403, 404, 409, 413, 422, 429]);

/**
 * retryable: another route can help (server errors, overload, timeout); refusal: the vendor's answer
 * to this request; unexpected: not an answer at all, so also another route's turn.
 */
export function classifyStatus(status: number): "retryable" | "refusal" | "unexpected" {
  if (status >= 500 || status === 408) return "retryable";
  return REFUSALS.has(status) ? "refusal" : "unexpected";
}

/** Vendor error bodies are small; more than this is not one, and is not read on. */
const MAX_ERROR_BODY = 64 * 1024;

/** The start of a failed answer's body, as text; "" when it cannot be read. */
export async function readErrorBody(response: Response): Promise<string> {
  if (!response.body) return "";
  const reader = response.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < MAX_ERROR_BODY) {
      const { done, value } = await reader.read();
      if (done) break;
      parts.push(value);
      size += value.length;
    }
  } catch {
    return "";
  } finally {
    reader.cancel().catch(() => {});
  }
  return size > MAX_ERROR_BODY ? "" : new TextDecoder().decode(Buffer.concat(parts));
}
