import { timingSafeEqual } from "node:crypto";
import { isIP } from "node:net";
import { hostname } from "node:os";
import { ipAllowed, parseCidrList } from "../core/ip.ts";
import { GatewayError } from "../core/errors.ts";
import type { OpenCall } from "./exchange.ts";

// The operator's guard: who may read the operator's paths that are not for everyone (/metrics),
// checked by app.ts's operator runner before the handler (handlers/operator.ts) runs.

const LOOPBACK = parseCidrList(["127.0.0.0/8", "::1"]);

/** Who may call an operator path: /metrics by [server] metrics; POST /reload from this machine only. */
export function operatorRefusal(call: OpenCall, path: string): GatewayError | null {
  if (path === "/metrics") return metricsRefusal(call);
  return localCaller(call) ? null : new GatewayError("ip", `${path} answers callers on this machine only (gateway reload).${hostHint(call)}`);
}

// The headers a reverse proxy adds, any one of them: nginx configurations often set X-Real-IP
// alone, and Caddy always sends X-Forwarded-Proto and X-Forwarded-Host.
const PROXY_HEADERS = ["x-forwarded-for", "forwarded", "x-real-ip", "x-forwarded-host", "x-forwarded-proto", "via"];

/**
 * Whether the request names this machine as its host: a loopback address, `localhost`, or the
 * machine's own name (Debian resolves it to 127.0.1.1). A page on another site whose name is made
 * to resolve to 127.0.0.1 (DNS rebinding) reaches the port from this machine's own browser, but its
 * requests carry that site's name as their Host, which its owner cannot make this machine's name.
 */
function localHost(request: Request): boolean {
  const name = new URL(request.url).hostname.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  if (name === "localhost" || name.endsWith(".localhost") || name === hostname().toLowerCase()) return true;
  return isIP(name) !== 0 && ipAllowed(LOOPBACK, name);
}

// A reverse proxy on the same host makes every caller look local: a proxied request is not local.
function localCaller(call: OpenCall): boolean {
  const request = call.request;
  const client = call.clientIp();
  const proxied = PROXY_HEADERS.some((h) => request.headers.has(h));
  return !!client && ipAllowed(LOOPBACK, client) && !proxied && localHost(request);
}

/** Why a caller on this machine was refused when its Host is the reason: what to use instead. */
function hostHint(call: OpenCall): string {
  if (localHost(call.request)) return "";
  return ` This request names the host ${new URL(call.request.url).host}: call it as 127.0.0.1 or localhost (another name is what a DNS-rebinding page sends).`;
}

/** Who may read /metrics ([server] metrics): loopback callers not behind a proxy, or the bearer token. */
function metricsRefusal(call: OpenCall): GatewayError | null {
  const { svc, request } = call;
  const access = svc.config.metrics;
  if (access.mode === "token") {
    const given = /^Bearer\s+(.+)$/i.exec(request.headers.get("authorization") ?? "")?.[1]?.trim() ?? "";
    const a = Buffer.from(given);
    const b = Buffer.from(access.token);
    if (a.length === b.length && timingSafeEqual(a, b)) return null;
    return new GatewayError("no-key", "GET /metrics needs Authorization: Bearer <the [server] metrics token>.");
  }
  if (localCaller(call)) return null;
  return new GatewayError("ip", `GET /metrics answers callers on this machine only ([server] metrics = "loopback"); set a token to scrape it from elsewhere.${hostHint(call)}`);
}
