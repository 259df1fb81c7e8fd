import { expectError } from "../support/errors.ts";
import { expect } from "bun:test";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";

/**
 * A browser of the dashboard against a real server: keeps the session cookie the server sets, and
 * sends what the dashboard's pages send (Origin of the gateway, JSON bodies). `ip` is the client
 * address the gateway believes (X-Forwarded-For from loopback, which dashboardGateway trusts), so
 * each test has throttles of its own.
 */
export class Browser {
  cookie: string | null = null;
  /** The session cookie's name as the server set it: `__Host-gw_session` on an HTTPS dashboard. */
  cookieName = "gw_session";
  /** The Set-Cookie header of the last answer that had one. */
  setCookie: string | null = null;

  constructor(
    readonly base: string,
    readonly ip = `10.0.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`,
  ) {}

  async call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
    const h: Record<string, string> = { origin: this.base, "x-forwarded-for": this.ip, ...headers };
    if (this.cookie) h.cookie = `${this.cookieName}=${this.cookie}`;
    if (body !== undefined) h["content-type"] ??= "application/json";
    const res = await fetch(this.base + path, { method, headers: h, body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body) });
    const set = res.headers.get("set-cookie");
    if (set) {
      this.setCookie = set;
      const [, name = "gw_session", value = ""] = /^((?:__Host-)?gw_session)=([^;]*)/.exec(set) ?? [];
      this.cookieName = name;
      this.cookie = value || null;
    }
    return res;
  }

  /** Registers `email` (a fresh one by default) and stays logged in. */
  async register(email = freshEmail(), password = "correct horse"): Promise<{ email: string; password: string; res: Response }> {
    const res = await this.call("POST", "/api/register", { email, password });
    return { email, password, res };
  }
}

let n = 0;
export const freshEmail = () => `holder${process.pid}-${++n}@test.local`;

/** A gateway whose X-Forwarded-For from loopback is believed, so Browser's addresses count. */
export function dashboardGateway(config: Record<string, unknown> = {}): Promise<TestGateway> {
  const server = (config.server as Record<string, unknown>) ?? {};
  return startTestGateway({ ...config, server: { trust_proxy: ["127.0.0.1"], ...server } });
}

export async function body<T = Record<string, any>>(res: Response): Promise<T> {
  return (await res.json()) as T;
}

/** A browser that has registered a fresh account (password "correct horse") and is logged in. */
export async function registeredBrowser(gw: { url: string }): Promise<Browser> {
  const b = new Browser(gw.url);
  await b.register();
  return b;
}

/** A registered, logged-in holder of a fresh account: its browser, id and email. */
export async function holderOn(gw: { url: string }): Promise<{ b: Browser; id: number; email: string }> {
  const b = await registeredBrowser(gw);
  const me = await body(await b.call("GET", "/api/me"));
  return { b, id: me.id, email: me.email };
}

/** A holder whose account is then marked admin. */
export async function adminOn(gw: TestGateway): Promise<{ b: Browser; id: number; email: string }> {
  const h = await holderOn(gw);
  await gw.services.accounts.setAdmin(h.id, true);
  return h;
}

// The error type of each code the dashboard's tests meet (spec, Errors; docs/dashboard.md).
const TYPE: Record<string, string> = {
  "no-session": "authentication_error",
  "no-key": "authentication_error",
  invalid_credentials: "authentication_error",
  invalid_second_factor: "authentication_error",
  second_factor_expired: "authentication_error",
  origin: "permission_error",
  admin: "permission_error",
  inactive: "permission_error",
  registration_closed: "permission_error",
  rate_limit_unavailable: "rate_limit",
};

/** The standard error shape with a request id, as on /v1 (the one expectError); returns the message. */
export async function refusedWith(res: Response, status: number, code: string): Promise<string> {
  return (await expectError(res, status, code, TYPE[code] ?? code)).message;
}
