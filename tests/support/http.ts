import { afterAll, afterEach, beforeAll, expect } from "bun:test";
import { findEndpoint } from "../../src/http/endpoints.ts";
import { startTestGateway, type TestGateway } from "./gateway.ts";

// Helpers for tests that talk HTTP to a real gateway: requests as a client sends them, and the
// spec's error object checked the same way everywhere.

export interface WireError {
  type: string;
  code: string;
  message: string;
  request_id: string;
}

/** Headers of a key route call; the key goes in Authorization: Bearer unless `x-api-key` is asked for. */
export function keyHeaders(key: string, extra: Record<string, string> = {}): Record<string, string> {
  return { authorization: `Bearer ${key}`, "content-type": "application/json", ...extra };
}

/** POSTs a JSON body (or raw text, sent as is) with exactly these headers. */
export function postBody(gw: { url: string }, path: string, body: unknown, headers: Record<string, string>): Promise<Response> {
  return fetch(`${gw.url}${path}`, { method: "POST", headers, body: typeof body === "string" ? body : JSON.stringify(body) });
}

/** POSTs a JSON body (or raw text, sent as is) to a key route, the key as Bearer. */
export function postJson(gw: { url: string }, path: string, key: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return postBody(gw, path, body, keyHeaders(key, headers));
}

export const hi = [{ role: "user", content: "hi" }];

/**
 * The spec's error object: the given status, error.code and error.type, exactly the four fields,
 * and a request_id prefixed gw_ that equals the x-gateway-request-id header.
 */
export async function expectError(res: Response, status: number, code: string, type: string = code): Promise<WireError> {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toStartWith("application/json");
  const body = (await res.json()) as { type?: string; error: WireError };
  // The Messages dialect's routes add Anthropic's top-level "type": "error" beside the spec's object.
  if (findEndpoint(new URL(res.url || "http://x/").pathname)?.envelope === "messages") {
    expect(Object.keys(body).sort()).toEqual(["error", "type"]);
    expect(body.type).toBe("error");
  } else expect(Object.keys(body)).toEqual(["error"]);
  expect(Object.keys(body.error).sort()).toEqual(["code", "message", "request_id", "type"]);
  expect(body.error.code).toBe(code);
  expect(body.error.type).toBe(type);
  expect(body.error.message).toBeString();
  expect(body.error.message.length).toBeGreaterThan(0);
  expect(body.error.request_id).toStartWith("gw_");
  expect(body.error.request_id).toBe(res.headers.get("x-gateway-request-id")!);
  return body.error;
}

/**
 * Spec, Retry rules 5: a failed request does not charge the balance. Takes a snapshot now; the
 * returned check asserts that balance, ledger and holds are exactly as they were.
 */
export function balanceGuard(gw: TestGateway, accountId: number): () => void {
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
 * with 5 USD, started before the file's tests and stopped after them. With `guardEach`, every test
 * is checked to leave balance, ledger and holds exactly as they were (Retry rules 5).
 */
export function fundedGateway(opts: { guardEach?: boolean } = {}): { gw: TestGateway; a: { key: string; accountId: number } } {
  const env = {} as { gw: TestGateway; a: { key: string; accountId: number } };
  let untouched: (() => void) | null = null;
  beforeAll(async () => {
    env.gw = await startTestGateway({ limits: { default_rpm: 1000 } });
    env.a = env.gw.account(5);
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

/** Width and height from a PNG's IHDR chunk, after checking the 8-byte signature. */
export function pngSize(bytes: Uint8Array): { width: number; height: number } {
  expect([...bytes.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  expect(new TextDecoder().decode(bytes.subarray(12, 16))).toBe("IHDR");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return { width: view.getUint32(16), height: view.getUint32(20) };
}
