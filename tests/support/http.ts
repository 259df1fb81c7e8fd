import { afterAll, afterEach, beforeAll, expect } from "bun:test";
import { startTestGateway, type Accounts, type TestGateway } from "./gateway.ts";

// Helpers for tests that talk HTTP to a gateway: requests as a client sends them, and the books
// checked unchanged after a failed one.

/**
 * A gateway a test talks to: on a socket at `url`, or in-process (support/app.ts) when it brings
 * `handle`, the app's own Request → Response.
 */
export interface Target {
  url: string;
  handle?: (request: Request) => Promise<Response>;
}

/** One request to `path`, over the network or in-process, as the target is. */
export async function send(gw: Target, path: string, init?: RequestInit): Promise<Response> {
  if (!gw.handle) return fetch(`${gw.url}${path}`, init);
  const request = new Request(`${gw.url}${path}`, init);
  const res = await gw.handle(request);
  // fetch's answers carry the URL they came from (expectError reads the route from it); the app's do not.
  Object.defineProperty(res, "url", { value: request.url });
  return res;
}

/** Headers of a key route call; the key goes in Authorization: Bearer unless `x-api-key` is asked for. */
export function keyHeaders(key: string, extra: Record<string, string> = {}): Record<string, string> {
  return { authorization: `Bearer ${key}`, "content-type": "application/json", ...extra };
}

/** POSTs a JSON body (or raw text, sent as is) with exactly these headers. */
export function postBody(gw: Target, path: string, body: unknown, headers: Record<string, string>): Promise<Response> {
  return send(gw, path, { method: "POST", headers, body: typeof body === "string" ? body : JSON.stringify(body) });
}

/** POSTs a JSON body (or raw text, sent as is) to a key route, the key as Bearer. */
export function postJson(gw: Target, path: string, key: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return postBody(gw, path, body, keyHeaders(key, headers));
}

export const hi = [{ role: "user", content: "hi" }];

/**
 * Spec, Retry rules 5: a failed request does not charge the balance. Takes a snapshot now; the
 * returned check asserts that balance, ledger and holds are exactly as they were.
 */
export function balanceGuard(gw: Pick<Accounts, "money">, accountId: number): () => void {
  const before = gw.money(accountId);
  return () => {
    const after = gw.money(accountId);
    expect(after).toEqual(before);
    expect(after.ledgerSum).toBe(after.balance);
    expect(after.openHolds).toBe(0);
  };
}

/**
 * The preamble of a file of HTTP tests: a gateway (its rate limit out of the way) and one account
 * with 5 USD, started before the file's tests and stopped after them. `start` picks the gateway: the
 * real server by default, support/app.ts's startAppGateway where no socket is needed. With
 * `guardEach`, every test is checked to leave balance, ledger and holds exactly as they were (Retry rules 5).
 */
export function fundedGateway<G extends Target & Accounts & { stop(): Promise<void> } = TestGateway>(
  opts: { guardEach?: boolean; start?: (config: Record<string, unknown>) => Promise<G> } = {},
): { gw: G; a: { key: string; accountId: number } } {
  const env = {} as { gw: G; a: { key: string; accountId: number } };
  const start = opts.start ?? (startTestGateway as unknown as (config: Record<string, unknown>) => Promise<G>);
  let untouched: (() => void) | null = null;
  beforeAll(async () => {
    env.gw = await start({ limits: { default_rpm: 1000 } });
    env.a = await env.gw.account(5);
    if (opts.guardEach) untouched = balanceGuard(env.gw, env.a.accountId);
  });
  if (opts.guardEach) afterEach(() => untouched?.());
  afterAll(() => env.gw.stop());
  return env;
}

/** All response headers as a plain object, for toMatchObject and not.toHaveProperty. */
export function headersOf(res: Response): Record<string, string> {
  const out: Record<string, string> = {};
  res.headers.forEach((v, k) => (out[k] = v));
  return out;
}
