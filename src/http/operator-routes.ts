import { Elysia } from "elysia";
import type { Server } from "bun";
import { timingSafeEqual } from "node:crypto";
import { clientAddress, ipAllowed, parseCidrList } from "../core/ip.ts";
import { asGatewayError, GatewayError } from "../core/errors.ts";
import { newRequestId } from "../core/request-id.ts";
import type { Services } from "../services.ts";
import { errorResponse } from "./errors.ts";
import { json } from "./public-routes.ts";

// The operator's routes, outside /v1: liveness, readiness and metrics for orchestrators and Prometheus.
// They write no request log row (a probe every few seconds would fill it) and carry no CORS.

type Ctx = { request: Request; server: Server<unknown> | null };

const LOOPBACK = parseCidrList(["127.0.0.0/8", "::1"]);

/** GET /readyz: whether the database takes a write now (the group commit, owner of BEGIN and COMMIT, probes it). */
function writable(svc: Services): GatewayError | null {
  const refusal = svc.commits.writeRefusal();
  return refusal ? asGatewayError(refusal) : null;
}

/** Who may read /metrics ([server] metrics): loopback callers not behind a proxy, or the bearer token. */
function metricsRefusal(svc: Services, request: Request, server: Server<unknown> | null): GatewayError | null {
  const access = svc.config.metrics;
  if (access.mode === "token") {
    const given = /^Bearer\s+(.+)$/i.exec(request.headers.get("authorization") ?? "")?.[1]?.trim() ?? "";
    const a = Buffer.from(given);
    const b = Buffer.from(access.token);
    if (a.length === b.length && timingSafeEqual(a, b)) return null;
    return new GatewayError("no-key", "GET /metrics needs Authorization: Bearer <the [server] metrics token>.");
  }
  const peer = server?.requestIP(request)?.address ?? null;
  const client = clientAddress(peer, request.headers.get("x-forwarded-for"), svc.config.trustProxy);
  // A reverse proxy on the same host makes every caller look local: a proxied request is not local.
  const proxied = request.headers.has("x-forwarded-for") || request.headers.has("forwarded");
  if (client && ipAllowed(LOOPBACK, client) && !proxied) return null;
  return new GatewayError("ip", "GET /metrics answers callers on this machine only ([server] metrics = \"loopback\"); set a token to scrape it from elsewhere.");
}

export function operatorRoutes(svc: Services) {
  const app = new Elysia({ name: "operator-routes" })
    .get("/healthz", () => json({ status: "ok" }), { detail: { hide: true } })
    .get(
      "/readyz",
      () => {
        const refusal = svc.settings.paused
          ? new GatewayError("product_paused", "The service is paused by its operator.", { retryAfter: 60 })
          : writable(svc);
        return refusal ? errorResponse(refusal, newRequestId(), {}, { quiet: true }) : json({ status: "ready" });
      },
      { detail: { hide: true } },
    );
  if (svc.config.metrics.mode === "off") return app;
  return app.get(
    "/metrics",
    async ({ request, server }: Ctx) => {
      const refusal = metricsRefusal(svc, request, server);
      if (refusal) return errorResponse(refusal, newRequestId(), {}, { quiet: true });
      return new Response(await svc.metrics.render(), { headers: { "content-type": svc.metrics.registry.contentType } });
    },
    { detail: { hide: true } },
  );
}
