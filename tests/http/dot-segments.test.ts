import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { rawRequest } from "../support/raw-http.ts";

// Issue 14, item 12: a request target with dot segments (or %2e, or a trailing slash) means the route it
// normalises to, as for every URL parser (RFC 3986 §5.2.4). fetch normalises the URL before sending,
// so these tests write the request line on a raw socket.

let gw: TestGateway;
let key: string;
beforeAll(async () => {
  gw = await startTestGateway({ limits: { default_rpm: 1000 } });
  key = (await gw.account(5)).key;
});
afterAll(() => gw.stop());

/** Sends `method target` exactly as written and reads the whole answer, its body as JSON. */
async function requestLine(method: string, target: string, body = ""): Promise<{ status: number; headers: Record<string, string>; body: Record<string, any> }> {
  const headers: [string, string][] = [["x-api-key", key], ["content-type", "application/json"]];
  const res = await rawRequest(Number(new URL(gw.url).port), { method, target, headers, body: new TextEncoder().encode(body) });
  return { status: res.status, headers: res.headers, body: JSON.parse(res.text()) };
}

const ask = JSON.stringify({ model: "demo-text-1", max_tokens: 8, messages: [{ role: "user", content: "hi" }] });

describe("a request target that normalises to a published route", () => {
  it("serves POST /v1/../v1/messages as POST /v1/messages", async () => {
    const res = await requestLine("POST", "/v1/../v1/messages", ask);
    expect(res.status).toBe(200);
    expect(res.body.type).toBe("message");
  });

  it("serves a percent-encoded dot segment the same way", async () => {
    const res = await requestLine("POST", "/v1/%2e%2e/v1/chat/completions", ask);
    expect(res.status).toBe(200);
    expect(res.body.object).toBe("chat.completion");
  });

  it("serves POST /v1/messages/ with its trailing slash", async () => {
    const res = await requestLine("POST", "/v1/messages/", ask);
    expect(res.status).toBe(200);
    expect(res.body.type).toBe("message");
  });

  it("serves GET /v1/../openapi.json the OpenAPI document", async () => {
    const res = await requestLine("GET", "/v1/../openapi.json");
    expect(res.status).toBe(200);
    expect(res.body.info.title).toBe("gateway");
  });

  it("serves GET /openapi.json/ with its trailing slash the OpenAPI document", async () => {
    const res = await requestLine("GET", "/openapi.json/");
    expect(res.status).toBe(200);
    expect(res.body.info.title).toBe("gateway");
  });

  it("serves GET /v1/./models", async () => {
    const res = await requestLine("GET", "/v1/./models");
    expect(res.status).toBe(200);
    expect(res.body.object).toBe("list");
  });

  it("still answers another method with 405 and the allow header", async () => {
    const res = await requestLine("GET", "/v1/../v1/messages");
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe("POST");
  });

  it("answers a target that normalises to no route with 404 endpoint_not_found", async () => {
    const res = await requestLine("POST", "/v1/../v1/nope", ask);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("endpoint_not_found");
  });
});
