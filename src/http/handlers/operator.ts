import { timingSafeEqual } from "node:crypto";
import { ipAllowed, parseCidrList } from "../../core/ip.ts";
import { asGatewayError, GatewayError } from "../../core/errors.ts";
import type { Services } from "../../services.ts";
import type { OpenCall } from "../exchange.ts";
import { json } from "./public.ts";

// The operator's endpoints, outside /v1: liveness, readiness and metrics for orchestrators and
// Prometheus. Being outside /v1 they write no request log row. (`/` is the dashboard's page,
// served by Bun beside the table: dashboard/page.ts.)

const LOOPBACK = parseCidrList(["127.0.0.0/8", "::1"]);

/** GET /readyz: whether the database takes a write now (the group commit, owner of BEGIN and COMMIT, probes it). */
async function writable(svc: Services): Promise<GatewayError | null> {
  const refusal = await svc.commits.writeRefusal();
  return refusal ? asGatewayError(refusal) : null;
}

/** Who may read /metrics ([server] metrics): loopback callers not behind a proxy, or the bearer token. */
export function metricsRefusal({ svc, request, clientIp }: OpenCall): GatewayError | null {
  const access = svc.config.metrics;
  if (access.mode === "token") {
    const given = /^Bearer\s+(.+)$/i.exec(request.headers.get("authorization") ?? "")?.[1]?.trim() ?? "";
    const a = Buffer.from(given);
    const b = Buffer.from(access.token);
    if (a.length === b.length && timingSafeEqual(a, b)) return null;
    return new GatewayError("no-key", "GET /metrics needs Authorization: Bearer <the [server] metrics token>.");
  }
  const client = clientIp();
  // A reverse proxy on the same host makes every caller look local: a proxied request is not local.
  const proxied = request.headers.has("x-forwarded-for") || request.headers.has("forwarded");
  if (client && ipAllowed(LOOPBACK, client) && !proxied) return null;
  return new GatewayError("ip", "GET /metrics answers callers on this machine only ([server] metrics = \"loopback\"); set a token to scrape it from elsewhere.");
}

export const healthz = () => json({ status: "ok" });

export async function readyz({ svc }: OpenCall): Promise<Response> {
  const refusal = svc.settings.paused ? new GatewayError("product_paused", "The service is paused by its operator.", { retryAfter: 60 }) : await writable(svc);
  if (refusal) throw refusal;
  return json({ status: "ready" });
}

export async function metrics({ svc }: OpenCall): Promise<Response> {
  return new Response(await svc.metrics.render(), { headers: { "content-type": svc.metrics.registry.contentType } });
}
