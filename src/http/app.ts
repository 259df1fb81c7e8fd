import { Elysia } from "elysia";
import type { Server } from "bun";
import type { Services } from "../services.ts";
import { serveText } from "../relay/text.ts";
import { countTokens, me } from "./account-routes.ts";
import { errorResponse, requestIdHeaders, toGatewayError } from "./errors.ts";
import { newRequestId } from "../request-id.ts";
import type { GatewayError } from "../errors.ts";
import { runKeyRoute, type KeyRouteOptions, type KeyedCall } from "./pipeline.ts";
import { getModel, listModels, pricing, status } from "./public-routes.ts";
import { CORS_HEADERS, endpointNotFound, findRoute, methodNotAllowed, preflight, PUBLISHED_ROUTES } from "./routing.ts";
import { clientAddress } from "../auth/ip.ts";
import { ChatBody, MessagesBody, validate } from "./schemas.ts";
import { serveResponses } from "../relay/responses.ts";
import { serveImages } from "../relay/images.ts";

type Ctx = { request: Request; server: Server<unknown> | null };

function clientIp(svc: Services, request: Request, server: Server<unknown> | null): string | null {
  const peer = server?.requestIP(request)?.address ?? null;
  return clientAddress(peer, request.headers.get("x-forwarded-for"), svc.config.trustProxy);
}

function splitUrl(url: string): { pathname: string; search: string } {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  const q = url.indexOf("?", start);
  return q === -1 ? { pathname: url.slice(start), search: "" } : { pathname: url.slice(start, q), search: url.slice(q) };
}

/**
 * The {id} of /v1/models/{id}, percent-decoded. The trailing slash the other routes tolerate is not part
 * of the id, and a malformed escape (%E0%A4%A) names no model: it gets the unknown-id 404, not a 500.
 */
function modelIdOf(pathname: string): string {
  const raw = pathname.slice("/v1/models/".length).replace(/\/$/, "");
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** A log row for /v1 requests that never reach a key route (public GETs, unknown paths). */
function logPlain(svc: Services, request: Request, pathname: string, requestId: string, status: number, errorCode: string | null, started: number): void {
  if (!pathname.startsWith("/v1/")) return;
  svc.logs.write({ requestId, method: request.method, path: pathname, status, errorCode, latencyMs: performance.now() - started });
}

/** Public routes answer errors (unknown model id) with CORS too, since browsers may call them. */
function publicRoute(fn: (svc: Services, request: Request) => Response, svc: Services) {
  return ({ request }: Ctx) => {
    const started = performance.now();
    const requestId = newRequestId();
    const { pathname } = splitUrl(request.url);
    let response: Response;
    let code: string | null = null;
    try {
      response = fn(svc, request);
      if (pathname.startsWith("/v1/")) for (const [k, v] of Object.entries(requestIdHeaders(requestId))) response.headers.set(k, v);
    } catch (e) {
      const err = toGatewayError(e);
      code = err.code;
      response = errorResponse(err, requestId, { ...CORS_HEADERS });
    }
    logPlain(svc, request, pathname, requestId, response.status, code, started);
    return response;
  };
}

export function buildApp(svc: Services) {
  const keyRoute = (opts: KeyRouteOptions, handler: (c: KeyedCall) => Response | Promise<Response>) => ({ request, server }: Ctx) =>
    runKeyRoute(svc, request, splitUrl(request.url), () => clientIp(svc, request, server), opts, async (c) => handler(c));
  const JSON_MAIN: KeyRouteOptions = { bucket: "main", body: "json" };

  // One handler per published route (routing.ts), by its path: Elysia routes on the request target as
  // sent, and the fallback below serves the same handlers for a target that only normalises to one.
  const handlers: Record<string, (c: Ctx) => Response | Promise<Response>> = {
    "/status": publicRoute(status, svc),
    "/v1/models": publicRoute(listModels, svc),
    "/v1/models/{id}": publicRoute((s, request) => getModel(s, modelIdOf(splitUrl(request.url).pathname)), svc),
    "/api/pricing": publicRoute(pricing, svc),
    "/v1/messages": keyRoute(JSON_MAIN, (c) => {
      validate(MessagesBody, c.json);
      return serveText(c, "messages", c.json);
    }),
    "/v1/chat/completions": keyRoute(JSON_MAIN, (c) => {
      validate(ChatBody, c.json);
      return serveText(c, "chat", c.json);
    }),
    "/v1/messages/count_tokens": keyRoute({ bucket: "count_tokens", body: "json" }, countTokens),
    "/v1/responses": keyRoute(JSON_MAIN, serveResponses),
    "/v1/images/generations": keyRoute(JSON_MAIN, (c) => serveImages(c, "images.generations")),
    "/v1/images/edits": keyRoute({ bucket: "main", body: "multipart" }, (c) => serveImages(c, "images.edits")),
    "/v1/me": keyRoute({ bucket: "main", body: "none" }, me),
  };
  let app = new Elysia({ normalize: false });
  for (const r of PUBLISHED_ROUTES) app = app.route(r.method, r.path.replace(/\{(\w+)\}/g, ":$1"), handlers[r.path]!);

  return app
    .head("/", () => new Response(null, { status: 200 }))
    .get("/", () => new Response("gateway: see GET /status and GET /v1/models\n", { headers: { "content-type": "text/plain" } }))
    .onError(({ code, error, request, server }) => {
      const started = performance.now();
      const requestId = newRequestId();
      const route = code === "NOT_FOUND" ? findRoute(splitUrl(request.url).pathname) : undefined;
      // The router matches the target as sent; request.url is already normalised (dot segments,
      // %2e, a trailing slash). A target that normalises to a published route and method is that
      // route, as it is for every URL parser: /v1/../v1/messages answered a baffling "use POST" 405.
      if (route?.method === request.method) return handlers[route.path]!({ request, server });
      const err = code === "NOT_FOUND" ? unrouted(request) : toGatewayError(code === "PARSE" ? (error as Error).cause : error);
      if (err instanceof Response) {
        if (request.url.includes("/v1/")) for (const [k, v] of Object.entries(requestIdHeaders(requestId))) err.headers.set(k, v);
        return err;
      }
      logPlain(svc, request, splitUrl(request.url).pathname, requestId, err.status, err.code, started);
      return errorResponse(err, requestId, corsFor(request), { path: splitUrl(request.url).pathname });
    });
}

const corsFor = (request: Request): Record<string, string> => (findRoute(splitUrl(request.url).pathname)?.cors ? { ...CORS_HEADERS } : {});

/** Unknown paths and wrong methods: 404 endpoint_not_found, 405 with allow; CORS preflight and HEAD answered. */
function unrouted(request: Request): Response | GatewayError {
  const { pathname } = splitUrl(request.url);
  const route = findRoute(pathname);
  if (route) {
    if (request.method === "OPTIONS" && route.cors) return preflight(request);
    if (request.method === "HEAD" && route.method === "GET") return new Response(null, { status: 200, headers: route.cors ? { ...CORS_HEADERS } : {} });
    return methodNotAllowed(request.method, route);
  }
  return endpointNotFound(request.method, pathname);
}
