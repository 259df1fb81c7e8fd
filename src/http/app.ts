import { Elysia } from "elysia";
import type { Server } from "bun";
import type { Services } from "../services.ts";
import { serveText } from "../relay/text.ts";
import { countTokens, me } from "./account-routes.ts";
import { errorResponse, newRequestId } from "./errors.ts";
import { runKeyRoute, type KeyRouteOptions, type KeyedCall } from "./pipeline.ts";
import { getModel, listModels, pricing, status } from "./public-routes.ts";
import { CORS_HEADERS, endpointNotFound, findRoute, methodNotAllowed, preflight } from "./routing.ts";
import { ChatBody, MessagesBody, validate } from "./schemas.ts";
import { serveResponses } from "../relay/responses.ts";
import { serveImages } from "../relay/images.ts";

type Ctx = { request: Request; server: Server<unknown> | null };

function clientIp(svc: Services, request: Request, server: Server<unknown> | null): string | null {
  if (svc.config.trustProxy) {
    const fwd = request.headers.get("x-forwarded-for");
    if (fwd) return fwd.split(",")[0]!.trim();
  }
  return server?.requestIP(request)?.address ?? null;
}

function splitUrl(url: string): { pathname: string; search: string } {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  const q = url.indexOf("?", start);
  return q === -1 ? { pathname: url.slice(start), search: "" } : { pathname: url.slice(start, q), search: url.slice(q) };
}

/** Public routes answer errors (unknown model id) with CORS too, since browsers may call them. */
function publicRoute(fn: (svc: Services, request: Request) => Response, svc: Services) {
  return ({ request }: Ctx) => {
    try {
      return fn(svc, request);
    } catch (e) {
      return errorResponse(e, newRequestId(), { ...CORS_HEADERS });
    }
  };
}

export function buildApp(svc: Services) {
  const keyRoute = (opts: KeyRouteOptions, handler: (c: KeyedCall) => Response | Promise<Response>) => ({ request, server }: Ctx) =>
    runKeyRoute(svc, request, splitUrl(request.url), clientIp(svc, request, server), opts, async (c) => handler(c));
  const JSON_MAIN: KeyRouteOptions = { bucket: "main", body: "json" };

  return new Elysia({ normalize: false })
    .get("/status", publicRoute(status, svc))
    .get("/v1/models", publicRoute(listModels, svc))
    .get(
      "/v1/models/:id",
      publicRoute((s, request) => getModel(s, decodeURIComponent(splitUrl(request.url).pathname.slice("/v1/models/".length))), svc),
    )
    .get("/api/pricing", publicRoute(pricing, svc))
    .post(
      "/v1/messages",
      keyRoute(JSON_MAIN, (c) => {
        validate(MessagesBody, c.json);
        return serveText(c, "messages", c.json);
      }),
    )
    .post(
      "/v1/chat/completions",
      keyRoute(JSON_MAIN, (c) => {
        validate(ChatBody, c.json);
        return serveText(c, "chat", c.json);
      }),
    )
    .post("/v1/messages/count_tokens", keyRoute({ bucket: "count_tokens", body: "json" }, countTokens))
    .post("/v1/responses", keyRoute(JSON_MAIN, serveResponses))
    .post("/v1/images/generations", keyRoute(JSON_MAIN, (c) => serveImages(c, "images.generations")))
    .post("/v1/images/edits", keyRoute({ bucket: "main", body: "multipart" }, (c) => serveImages(c, "images.edits")))
    .get("/v1/me", keyRoute({ bucket: "main", body: "none" }, me))
    .head("/", () => new Response(null, { status: 200 }))
    .get("/", () => new Response("gateway: see GET /status and GET /v1/models\n", { headers: { "content-type": "text/plain" } }))
    .onError(({ code, error, request }) => {
      if (code === "NOT_FOUND") return unrouted(request);
      return errorResponse(code === "PARSE" ? (error as Error).cause : error, newRequestId());
    });
}

/** Unknown paths and wrong methods: 404 endpoint_not_found, 405 with allow, CORS preflight. */
function unrouted(request: Request): Response {
  const { pathname } = splitUrl(request.url);
  const requestId = newRequestId();
  const route = findRoute(pathname);
  if (route) {
    if (request.method === "OPTIONS" && route.cors) return preflight(request);
    if (request.method === "HEAD" && route.method === "GET") return new Response(null, { status: 200, headers: route.cors ? { ...CORS_HEADERS } : {} });
    return errorResponse(methodNotAllowed(request.method, route), requestId, route.cors ? { ...CORS_HEADERS } : {});
  }
  return errorResponse(endpointNotFound(request.method, pathname), requestId);
}
