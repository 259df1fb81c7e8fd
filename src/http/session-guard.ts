import { presentedKey } from "../auth/presented-key.ts";
import { SESSION_COOKIE, type SessionStore, type SessionView } from "../store/sessions/contract.ts";
import { GatewayError } from "../core/errors.ts";
import type { AccountThrottles } from "../limits/throttle.ts";
import type { Services } from "../services.ts";
import { parseJsonObject, readBodyLimited } from "./body.ts";
import { requestIdHeaders } from "./errors.ts";
import type { Exchange, OpenCall } from "./exchange.ts";
import { refuseNul, validate } from "./schemas.ts";
import type { TSchema } from "@sinclair/typebox";

// The front half of every dashboard endpoint under /api/ (docs/dashboard.md): no API keys, the
// Origin and JSON rules of a state-changing request, the session cookie. A failure is thrown to the
// one catch site (app.ts), which answers it in the error shape with a request id, no-store and no CORS.

// A dashboard form is a few hundred bytes; the 20 MiB of /v1 would only invite abuse here.
const API_BODY_LIMIT = 64 * 1024;

/** What the dashboard's endpoints keep for the life of the server: the sessions' table and the throttles. */
export interface Dashboard {
  sessions: SessionStore;
  throttles: AccountThrottles;
}

export const newDashboard = (svc: Services): Dashboard => ({ sessions: svc.sessions, throttles: svc.throttles });

/** What a dashboard endpoint's handler is given. */
export interface SessionCall extends OpenCall {
  requestId: string;
  /** The JSON object of a state-changing request, checked against the endpoint's schema; {} for GET and for an empty body. */
  json: Record<string, unknown>;
  /** The cookie's token, whether or not it opens a session. */
  token: string | null;
  /** The live session of the cookie; endpoints of the `session` kind never see null. */
  session: SessionView | null;
  dash: Dashboard;
}

export const noSession = (message = "Log in first: this route takes the dashboard's session cookie.") => new GatewayError("no-session", message);

/**
 * Runs a dashboard endpoint. `required` refuses a request without a live session (401) and one of a
 * disabled account (403 inactive); without it (register, login, logout) the session is optional.
 */
export async function runSessionEndpoint(
  x: Exchange,
  e: { schema: TSchema | null; handler: (c: SessionCall) => Response | Promise<Response> },
  required: boolean,
  dash: Dashboard,
): Promise<Response> {
  const { svc, request } = x;
  if (presentedKey(request.headers)) {
    throw noSession("The /api/ routes take the dashboard's session cookie, never an API key (API keys are for /v1).");
  }
  const write = request.method !== "GET" && request.method !== "HEAD";
  if (write) checkOrigin(svc, request);
  // The session before the body, as the key before it on /v1: a request without one is answered
  // (and its connection closed, app.ts) without waiting for its upload.
  const token = cookieOf(request.headers.get("cookie"), sessionCookieName(svc, request));
  const session = token ? await dash.sessions.find(token) : null;
  if (required && !session) throw noSession();
  if (required && session!.accountDisabledAt !== null) throw new GatewayError("inactive", "This account is disabled by the operator.");
  const json = write ? await readJson(request) : {};
  refuseNul(json, new URL(request.url).searchParams);
  if (write && e.schema) validate(e.schema, json);
  const call: SessionCall = {
    svc,
    request,
    pathname: x.pathname,
    endpoint: x.endpoint,
    clientIp: () => x.clientIp(),
    requestId: x.requestId,
    json,
    token,
    session,
    dash,
  };
  const response = await e.handler(call);
  // A write that joined the group commit's open batch is not answered before that batch is durable.
  if (write) await svc.commits.durable();
  for (const [k, v] of Object.entries(requestIdHeaders(x.requestId))) response.headers.set(k, v);
  response.headers.set("cache-control", "no-store");
  return response;
}

/**
 * CSRF: a state-changing request must come from the dashboard's own origin, `[server] public_url`,
 * or, when that is not set, the origin the request was sent to. Browsers send Origin on every
 * cross-site POST, PUT, PATCH and DELETE, and a page cannot forge it; no Origin at all is refused too.
 */
function checkOrigin(svc: Services, request: Request): void {
  const origin = request.headers.get("origin");
  const expected = svc.config.publicUrl ? new URL(svc.config.publicUrl).origin : new URL(request.url).origin;
  if (origin === null) throw new GatewayError("origin", `This request carries no Origin header; the dashboard's requests come from ${expected}.`);
  if (origin !== expected) throw new GatewayError("origin", `Requests from ${origin} are not accepted; the dashboard's requests come from ${expected}.`);
}

/**
 * JSON bodies only: a form or text/plain body is what a cross-site form can send without a
 * preflight, so anything but application/json is refused (415), even when empty of data.
 */
async function readJson(request: Request): Promise<Record<string, unknown>> {
  const type = request.headers.get("content-type");
  const bytes = await readBodyLimited(request, API_BODY_LIMIT);
  if (type === null && bytes.byteLength === 0) return {};
  if (type === null || !/^application\/json\s*(;|$)/i.test(type)) {
    throw new GatewayError("unsupported_media_type", `The /api/ routes take application/json bodies, not ${type ?? "a body without Content-Type"}.`);
  }
  return bytes.byteLength === 0 ? {} : parseJsonObject(bytes);
}

/** The value of one cookie of a Cookie header; null when it is not there. */
export function cookieOf(header: string | null, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim() || null;
  }
  return null;
}

const servedOverHttps = (svc: Services, request: Request) => svc.config.publicUrl.startsWith("https:") || request.url.startsWith("https:");

/**
 * The session cookie's name: `__Host-gw_session` when the dashboard is served over HTTPS. Browsers
 * take a `__Host-` cookie only from this very host (Secure, Path=/, no Domain), so a sibling
 * subdomain (`evil.example.com` beside `gateway.example.com`) cannot plant one: a `gw_session` it
 * sets for the whole domain, with a longer Path that browsers send first, is then never read. Plain
 * HTTP cannot carry a `__Host-` cookie; there the name stays `gw_session`.
 */
export const sessionCookieName = (svc: Services, request: Request): string => (servedOverHttps(svc, request) ? `__Host-${SESSION_COOKIE}` : SESSION_COOKIE);

/**
 * The session cookie: HttpOnly (no script reads it), SameSite=Lax (not sent on cross-site
 * sub-requests), Secure when the dashboard is served over HTTPS, Path=/ for the pages and /api/.
 */
export function sessionCookie(svc: Services, request: Request, value: { token: string; expiresAt: number } | null): string {
  const secure = servedOverHttps(svc, request);
  const life = value
    ? `${value.token}; Expires=${new Date(value.expiresAt).toUTCString()}; Max-Age=${Math.max(0, Math.floor((value.expiresAt - Date.now()) / 1000))}`
    : "; Max-Age=0";
  return `${sessionCookieName(svc, request)}=${life}; Path=/; HttpOnly; SameSite=Lax${secure ? "; Secure" : ""}`;
}
