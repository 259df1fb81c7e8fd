import { Elysia } from "elysia";
import type { Server } from "bun";
import type { Services } from "../services.ts";
import { serveText } from "../relay/text.ts";
import { countTokens, me } from "./account-routes.ts";
import { errorResponse, requestIdHeaders, toGatewayError } from "./errors.ts";
import { newRequestId } from "../core/request-id.ts";
import type { GatewayError } from "../core/errors.ts";
import { runKeyRoute, type KeyRouteOptions, type KeyedCall } from "./pipeline.ts";
import { getModel, listModels, pricing, status } from "./public-routes.ts";
import { CORS_HEADERS, endpointNotFound, findRoute, methodNotAllowed, preflight, PUBLISHED_ROUTES } from "./routing.ts";
import { clientAddress } from "../core/ip.ts";
import { presentedKey } from "../auth/keys.ts";
import { RefusalGate, type RefusalGateOptions } from "../limits/refusals.ts";
import { ChatBody, ImageGenerationBody, MessagesBody, ResponsesBody, validate } from "./schemas.ts";
import { serveResponses } from "../relay/responses.ts";
import { serveImages } from "../relay/images.ts";
import { doc, openapiDocument, ROUTE_DOCS } from "./openapi.ts";
import { operatorRoutes } from "./operator-routes.ts";
import { apiRoutes } from "./api-routes.ts";

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

/**
 * A refusal that carries no valid key (401, or 404/405 on /v1), while its address is over the refusal
 * budget (limits/refusals.ts): the 429 to answer instead, with no row. Null: answer and log as usual.
 * The key is looked up only then, so valid keys pay nothing and are never refused here.
 */
function overRefusalBudget(svc: Services, gate: RefusalGate, request: Request, ip: string | null): GatewayError | null {
  const wait = gate.waitFor(ip);
  if (wait === null || svc.keys.lookup(presentedKey(request.headers))) return null;
  return gate.refuse(ip, wait);
}

/** A log row for /v1 requests that never reach a key route (public GETs, unknown paths). */
function logPlain(svc: Services, request: Request, pathname: string, requestId: string, status: number, errorCode: string | null, started: number): void {
  if (!pathname.startsWith("/v1/")) return;
  svc.logs.write({ requestId, method: request.method, path: pathname, status, errorCode, latencyMs: performance.now() - started });
}

/** Public routes answer errors (unknown model id) with CORS too, since browsers may call them. */
function publicRoute(fn: (svc: Services, request: Request) => Response, svc: Services, gate: RefusalGate) {
  return ({ request, server }: Ctx) => {
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
      const ip = err.status === 404 && pathname.startsWith("/v1/") ? clientIp(svc, request, server) : undefined;
      const over = ip === undefined ? null : overRefusalBudget(svc, gate, request, ip);
      if (over) return errorResponse(over, requestId, { ...CORS_HEADERS }, { path: pathname });
      if (ip !== undefined) gate.spend(ip);
      code = err.code;
      response = errorResponse(err, requestId, { ...CORS_HEADERS });
    }
    logPlain(svc, request, pathname, requestId, response.status, code, started);
    return response;
  };
}

export function buildApp(svc: Services, gateOptions: RefusalGateOptions = {}) {
  const refusals = new RefusalGate(gateOptions);
  // The refusals of the last minute before a stop are summarised too.
  svc.atStop.push(() => refusals.summarize());
  const keyRoute = (opts: KeyRouteOptions, handler: (c: KeyedCall) => Response | Promise<Response>) => async ({ request, server }: Ctx) => {
    const url = splitUrl(request.url);
    // The address is asked for only when needed (a key with an allow-list, a refusal): it costs a
    // native call per request otherwise (1 % of the CPU at c=16).
    let ip: string | null | undefined;
    const ipOf = () => (ip === undefined ? (ip = clientIp(svc, request, server)) : ip);
    // Over budget, a keyless request is turned away before its body is read (item 11).
    const over = refusals.untouched ? null : overRefusalBudget(svc, refusals, request, ipOf());
    if (over) return errorResponse(over, newRequestId(), {}, { path: url.pathname });
    const response = await runKeyRoute(svc, request, url, ipOf, opts, async (c) => handler(c));
    if (response.status === 401) refusals.spend(ipOf());
    return response;
  };
  const JSON_MAIN: KeyRouteOptions = { bucket: "main", body: "json" };

  // One handler per published route (routing.ts), by its path: Elysia routes on the request target as
  // sent, and the fallback below serves the same handlers for a target that only normalises to one.
  const handlers: Record<string, (c: Ctx) => Response | Promise<Response>> = {
    "/status": publicRoute(status, svc, refusals),
    "/v1/models": publicRoute(listModels, svc, refusals),
    "/v1/models/{id}": publicRoute((s, request) => getModel(s, modelIdOf(splitUrl(request.url).pathname)), svc, refusals),
    "/api/pricing": publicRoute(pricing, svc, refusals),
    "/v1/messages": keyRoute(JSON_MAIN, (c) => {
      validate(MessagesBody, c.json);
      return serveText(c, "messages", c.json);
    }),
    "/v1/chat/completions": keyRoute(JSON_MAIN, (c) => {
      validate(ChatBody, c.json);
      return serveText(c, "chat", c.json);
    }),
    "/v1/messages/count_tokens": keyRoute({ bucket: "count_tokens", body: "json" }, countTokens),
    "/v1/responses": keyRoute(JSON_MAIN, (c) => {
      validate(ResponsesBody, c.json);
      return serveResponses(c);
    }),
    "/v1/images/generations": keyRoute(JSON_MAIN, (c) => {
      validate(ImageGenerationBody, c.json);
      return serveImages(c, "images.generations");
    }),
    "/v1/images/edits": keyRoute({ bucket: "main", body: "multipart" }, (c) => serveImages(c, "images.edits")),
    "/v1/me": keyRoute({ bucket: "main", body: "none" }, me),
  };
  const app = new Elysia({ normalize: false }).use(openapiDocument(svc.version)).use(operatorRoutes(svc)).use(apiRoutes(svc));
  // Elysia's route() registers on the instance itself; its typed return is not needed here.
  for (const r of PUBLISHED_ROUTES) {
    const path = r.path.replace(/\{(\w+)\}/g, ":$1");
    app.route(r.method, path, handlers[r.path]!, doc(`${r.method} ${path}` as keyof typeof ROUTE_DOCS));
  }

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
      const { pathname } = splitUrl(request.url);
      if (code === "NOT_FOUND" && pathname.startsWith("/v1/")) {
        const ip = clientIp(svc, request, server);
        const over = overRefusalBudget(svc, refusals, request, ip);
        if (over) return errorResponse(over, requestId, corsFor(request), { path: pathname });
        refusals.spend(ip);
      }
      logPlain(svc, request, pathname, requestId, err.status, err.code, started);
      return errorResponse(err, requestId, corsFor(request), { path: pathname });
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
