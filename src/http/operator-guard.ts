import { timingSafeEqual } from "node:crypto";
import { ipAllowed, parseCidrList } from "../core/ip.ts";
import { GatewayError } from "../core/errors.ts";
import type { OpenCall } from "./exchange.ts";

// The operator's guard: who may read the operator's paths that are not for everyone (/metrics),
// checked by app.ts's operator runner before the handler (handlers/operator.ts) runs.

const LOOPBACK = parseCidrList(["127.0.0.0/8", "::1"]);

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
