import { GatewayError } from "../core/errors.ts";

export interface PublishedRoute {
  method: "GET" | "POST";
  path: string;
  /** Matches the pathname (already without query). */
  pattern: RegExp;
  /** Public routes carry CORS `*`; every other route takes an API key and has no CORS. */
  cors: boolean;
  /** The Messages dialect's routes answer errors in Anthropic's envelope (errors.ts). */
  messages: boolean;
}

const route = (method: "GET" | "POST", path: string, cors = false): PublishedRoute => ({
  method,
  path,
  cors,
  messages: path.startsWith("/v1/messages"),
  pattern: new RegExp(`^${path.replace(/\{[^}]+\}/g, "[^/]+")}/?$`),
});

export const PUBLISHED_ROUTES: PublishedRoute[] = [
  route("GET", "/status", true),
  route("GET", "/v1/models", true),
  route("GET", "/v1/models/{id}", true),
  route("GET", "/api/pricing", true),
  route("POST", "/v1/messages"),
  route("POST", "/v1/messages/count_tokens"),
  route("POST", "/v1/chat/completions"),
  route("POST", "/v1/responses"),
  route("POST", "/v1/images/generations"),
  route("POST", "/v1/images/edits"),
  route("GET", "/v1/me"),
];

export const CORS_HEADERS = { "access-control-allow-origin": "*" } as const;

export function findRoute(pathname: string): PublishedRoute | undefined {
  return PUBLISHED_ROUTES.find((r) => r.pattern.test(pathname));
}

export function endpointNotFound(method: string, pathname: string): GatewayError {
  const list = PUBLISHED_ROUTES.map((r) => `${r.method} ${r.path}`).join(", ");
  return new GatewayError("endpoint_not_found", `Unknown endpoint ${method} ${pathname}. Published routes: ${list}.`);
}

export function methodNotAllowed(method: string, r: PublishedRoute): GatewayError {
  const message =
    method === "OPTIONS" && !r.cors
      ? `OPTIONS is not supported on ${r.method} ${r.path}: routes that take an API key send no CORS headers, because keys must not be used in browser code. Call this route from a server.`
      : `Method ${method} is not allowed on ${r.path}; use ${r.method}.`;
  return new GatewayError("method_not_allowed", message, { headers: { allow: r.method } });
}

/** Preflight answer of the four public routes. */
export function preflight(request: Request): Response {
  return new Response(null, {
    status: 204,
    headers: {
      ...CORS_HEADERS,
      "access-control-allow-methods": "GET, OPTIONS",
      "access-control-allow-headers": request.headers.get("access-control-request-headers") ?? "*",
      "access-control-max-age": "86400",
    },
  });
}
