import { GatewayError } from "../errors.ts";

/** The single place that writes error bodies: exactly the spec's four fields. */
export function errorResponse(err: unknown, requestId: string, extraHeaders: Record<string, string> = {}): Response {
  const e = toGatewayError(err);
  const headers: Record<string, string> = {
    "content-type": "application/json",
    ...extraHeaders,
    ...requestIdHeaders(requestId),
    ...e.headers,
  };
  if (e.retryAfter !== undefined) headers["retry-after"] = String(e.retryAfter);
  return new Response(errorBody(e, requestId), { status: e.status, headers });
}

export function errorBody(e: GatewayError, requestId: string): string {
  return JSON.stringify({ error: { type: e.type, code: e.code, message: e.message, request_id: requestId } });
}

export function toGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  console.error("gateway: unexpected error:", err);
  return new GatewayError("internal_error", "The gateway hit an unexpected error. Report the request id to the operator.");
}

/**
 * x-gateway-request-id is the spec's header; request-id and x-request-id carry the same value so
 * the Anthropic and OpenAI SDKs show it as err.requestID / _request_id.
 */
export function requestIdHeaders(requestId: string): Record<string, string> {
  return { "x-gateway-request-id": requestId, "request-id": requestId, "x-request-id": requestId };
}
