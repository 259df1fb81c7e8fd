import type { Server } from "bun";
import { presentedKey } from "../auth/keys.ts";
import { SESSION_COOKIE, type Sessions, type SessionView } from "../auth/sessions.ts";
import { GatewayError } from "../core/errors.ts";
import { clientAddress } from "../core/ip.ts";
import { newRequestId } from "../core/request-id.ts";
import type { Services } from "../services.ts";
import { parseJsonObject, readBodyLimited } from "./body.ts";
import { errorResponse, requestIdHeaders } from "./errors.ts";

// The front half of every /api/ route (docs/dashboard.md): no API keys, the Origin and JSON rules of
// a state-changing request, the session cookie. Errors are the one error shape, with a request id,
// and never CORS headers.

// A dashboard form is a few hundred bytes; the 20 MiB of /v1 would only invite abuse here.
const API_BODY_LIMIT = 64 * 1024;

export interface ApiCall {
  svc: Services;
  request: Request;
  requestId: string;
  /** The JSON object of a state-changing request; {} for GET and for an empty body. */
  json: Record<string, unknown>;
  /** The cookie's token, whether or not it opens a session. */
  token: string | null;
  /** The live session of the cookie; routes with `session: true` never see null. */
  session: SessionView | null;
  params: Record<string, string>;
  /** The caller's address, as the key routes see it (X-Forwarded-For of trusted proxies only). */
  ip: () => string | null;
}

export type ApiCtx = { request: Request; server: Server<unknown> | null; params?: Record<string, string> };

export const noSession = (message = "Log in first: this route takes the dashboard's session cookie.") => new GatewayError("no-session", message);

/**
 * Wraps an /api/ handler. `session: true` refuses a request without a live session (401) and one of a
 * disabled account (403 inactive).
 */
export function apiRoute(svc: Services, sessions: Sessions, opts: { session: boolean }, handler: (c: ApiCall) => Response | Promise<Response>) {
  return async ({ request, server, params }: ApiCtx): Promise<Response> => {
    const requestId = newRequestId();
    try {
      if (presentedKey(request.headers)) {
        throw noSession("The /api/ routes take the dashboard's session cookie, never an API key (API keys are for /v1).");
      }
      const write = request.method !== "GET" && request.method !== "HEAD";
      if (write) checkOrigin(svc, request);
      const json = write ? await readJson(request) : {};
      const token = cookieOf(request.headers.get("cookie"), SESSION_COOKIE);
      const session = token ? sessions.find(token) : null;
      if (opts.session && !session) throw noSession();
      if (opts.session && session!.accountDisabledAt !== null) throw new GatewayError("inactive", "This account is disabled by the operator.");
      const peer = () => clientAddress(server?.requestIP(request)?.address ?? null, request.headers.get("x-forwarded-for"), svc.config.trustProxy);
      const response = await handler({ svc, request, requestId, json, token, session, params: params ?? {}, ip: peer });
      for (const [k, v] of Object.entries(requestIdHeaders(requestId))) response.headers.set(k, v);
      response.headers.set("cache-control", "no-store");
      return response;
    } catch (e) {
      return errorResponse(e, requestId, { "cache-control": "no-store" });
    }
  };
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

/**
 * The session cookie: HttpOnly (no script reads it), SameSite=Lax (not sent on cross-site
 * sub-requests), Secure when the dashboard is served over HTTPS, Path=/ for the pages and /api/.
 */
export function sessionCookie(svc: Services, request: Request, value: { token: string; expiresAt: number } | null): string {
  const secure = svc.config.publicUrl.startsWith("https:") || request.url.startsWith("https:");
  const life = value
    ? `${value.token}; Expires=${new Date(value.expiresAt).toUTCString()}; Max-Age=${Math.max(0, Math.floor((value.expiresAt - Date.now()) / 1000))}`
    : "; Max-Age=0";
  return `${SESSION_COOKIE}=${life}; Path=/; HttpOnly; SameSite=Lax${secure ? "; Secure" : ""}`;
}
