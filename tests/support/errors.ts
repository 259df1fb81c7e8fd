import { expect } from "bun:test";

// The spec's error object as a client reads it off an answer, and the full check of its shape.

export interface WireError {
  type: string;
  code: string;
  message: string;
  request_id: string;
}

/**
 * The Messages dialect's routes (a trailing slash tolerated): their errors add Anthropic's top-level
 * "type": "error" and "request_id" beside the spec's object. Written out here rather than read from src/http, so the
 * check does not follow the code it checks.
 */
const MESSAGES_ROUTE = /^\/v1\/messages(\/count_tokens)?\/?$/;

/** The error object of an answer, unchecked: for tests that look at one field. */
export async function errorOf(res: Response): Promise<WireError> {
  return ((await res.json()) as { error: WireError }).error;
}

/**
 * The spec's error object: the given status, error.code and error.type, exactly the four fields,
 * and a request_id prefixed gw_ that equals the x-gateway-request-id header.
 */
export async function expectError(res: Response, status: number, code: string, type: string = code): Promise<WireError> {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toStartWith("application/json");
  const body = (await res.json()) as { type?: string; error: WireError };
  if (MESSAGES_ROUTE.test(new URL(res.url || "http://x/").pathname)) {
    expect(Object.keys(body).sort()).toEqual(["error", "request_id", "type"]);
    expect(body.type).toBe("error");
    expect((body as { request_id?: string }).request_id).toBe(res.headers.get("x-gateway-request-id")!);
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
