import { asGatewayError, type GatewayError } from "../core/errors.ts";
import { events } from "../core/events.ts";

/** What the request had reached when it failed, for the operator's event line of a 5xx. */
export interface FailureContext {
  /** The upstream route key last tried. */
  route?: string;
  provider?: string;
  upstreamStatus?: number;
  /** The client went away: its answer goes nowhere and is no event. */
  quiet?: boolean;
  /** The endpoint's error envelope: the Messages dialect's endpoints get Anthropic's (errorBody). */
  envelope?: "standard" | "messages";
}

/**
 * The single place that writes error bodies: exactly the four fields of docs/api.md#errors. Every 5xx also writes
 * one line to the operator's event log (core/events.ts), with the request id the client was given.
 */
export function errorResponse(err: unknown, requestId: string, extraHeaders: Record<string, string> = {}, ctx: FailureContext = {}): Response {
  const e = toGatewayError(err);
  const headers: Record<string, string> = {
    "content-type": "application/json",
    ...extraHeaders,
    ...requestIdHeaders(requestId),
    ...e.headers,
  };
  if (e.retryAfter !== undefined) headers["retry-after"] = String(e.retryAfter);
  if (e.code === "product_paused") {
    // One line per pause, not one per refusal (core/events.ts).
    if (!ctx.quiet) events.refusedWhilePaused(requestId);
  } else if (e.status >= 500 && !ctx.quiet) {
    events.gatewayError({ requestId, status: e.status, code: e.code, route: ctx.route, provider: ctx.provider, upstreamStatus: ctx.upstreamStatus, cause: e.cause });
  }
  return new Response(errorBody(e, requestId, ctx.envelope), { status: e.status, headers });
}

/**
 * The error object (docs/api.md#errors). On the Messages dialect's endpoints it sits in Anthropic's envelope,
 * `{"type": "error", "error": …, "request_id": …}`: the Vercel AI SDK's Anthropic provider parses error bodies with
 * z.object({ type: z.literal("error"), error: { type, message } }) (vercel/ai
 * packages/anthropic/src/anthropic-error.ts) and, when that fails, shows only the status text; Anthropic's own
 * bodies name the request id at the top, where a client that logs the body finds it.
 */
export function errorBody(e: GatewayError, requestId: string, envelope: "standard" | "messages" = "standard"): string {
  const error = { type: e.type, code: e.code, message: e.message, request_id: requestId };
  return JSON.stringify(envelope === "messages" ? { type: "error", error, request_id: requestId } : { error });
}

/**
 * A stored error body (a kept failure, replayed under its Idempotency-Key) as this answer's: the
 * request id it names becomes `requestId`, the one the replay's headers carry (docs/api.md#errors).
 * A body that is not the gateway's error shape is returned as it is.
 */
export function replayedErrorBody(stored: string, requestId: string): string {
  let body: { error?: { request_id?: unknown }; request_id?: unknown };
  try {
    body = JSON.parse(stored);
  } catch {
    return stored;
  }
  if (typeof body?.error?.request_id !== "string") return stored;
  body.error.request_id = requestId;
  if ("request_id" in body) body.request_id = requestId;
  return JSON.stringify(body);
}

/** Anything thrown, as the gateway's error; logging is errorResponse's, once per answer. */
export const toGatewayError = asGatewayError;

/**
 * x-gateway-request-id is the documented header (docs/api.md#rules, rule 6); request-id and x-request-id carry the same value so
 * the Anthropic and OpenAI SDKs show it as err.requestID / _request_id.
 */
export function requestIdHeaders(requestId: string): Record<string, string> {
  return { "x-gateway-request-id": requestId, "request-id": requestId, "x-request-id": requestId };
}

/** The same three headers set on an answer's own headers, without the object and entry arrays a copy costs on every request. */
export function setRequestIdHeaders(headers: Headers, requestId: string): void {
  headers.set("x-gateway-request-id", requestId);
  headers.set("request-id", requestId);
  headers.set("x-request-id", requestId);
}
