import { describe, expect, it } from "bun:test";
import { startAppGateway } from "../support/app.ts";
import { balanceGuard, fundedGateway, headersOf, hi, keyHeaders, send } from "../support/http.ts";
import { expectError } from "../support/errors.ts";

// Spec, CORS: Access-Control-Allow-Origin * on exactly the four public GET routes; key routes send no
// CORS headers at all and answer OPTIONS with 405 and an explanation.

const t = fundedGateway({ start: startAppGateway });

const ORIGIN = { origin: "https://app.example" };
const PUBLIC = ["/status", "/v1/models", "/v1/models/demo-text-1", "/api/pricing"];

const KEY_ROUTES: [string, string, unknown][] = [
  ["POST", "/v1/messages", { model: "demo", max_tokens: 16, messages: hi }],
  ["POST", "/v1/messages/count_tokens", { model: "demo", messages: hi }],
  ["POST", "/v1/chat/completions", { model: "demo", max_tokens: 16, messages: hi }],
  ["POST", "/v1/images/generations", { model: "demo-image", prompt: "p", size: "16x16" }],
  ["GET", "/v1/me", undefined],
];

const corsHeaderNames = (res: Response) => Object.keys(headersOf(res)).filter((k) => k.startsWith("access-control-"));

describe("the four public routes", () => {
  it.each(PUBLIC)("GET %s carries access-control-allow-origin: *", async (path) => {
    const res = await send(t.gw, path, { headers: ORIGIN });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
  });

  it.each(PUBLIC)("OPTIONS %s is a preflight answered 204 with access-control-allow-origin: *", async (path) => {
    const res = await send(t.gw, path, {
      method: "OPTIONS",
      headers: { ...ORIGIN, "access-control-request-method": "GET", "access-control-request-headers": "x-stainless-os" },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(res.headers.get("access-control-allow-methods")).toContain("GET");
    expect(res.headers.get("access-control-allow-headers")).toContain("x-stainless-os");
  });

  it("carries access-control-allow-origin: * on the 404 of an unknown model id too", async () => {
    const res = await send(t.gw, "/v1/models/nope", { headers: ORIGIN });
    expect(res.status).toBe(404);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
  });
});

describe("key routes", () => {
  it.each(KEY_ROUTES)("%s %s sends no CORS header on success", async (method, path, body) => {
    const res = await send(t.gw, path, { method, headers: keyHeaders(t.a.key, ORIGIN), body: body === undefined ? undefined : JSON.stringify(body) });
    expect(res.status).toBe(200);
    expect(corsHeaderNames(res)).toEqual([]);
  });

  it.each(KEY_ROUTES)("%s %s sends no CORS header on an error", async (method, path, body) => {
    const res = await send(t.gw, path, { method, headers: { ...ORIGIN, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
    expect(res.status).toBe(401);
    expect(corsHeaderNames(res)).toEqual([]);
  });

  it("POST /v1/images/edits sends no CORS header on an error", async () => {
    const res = await send(t.gw, "/v1/images/edits", { method: "POST", headers: ORIGIN, body: new FormData() });
    expect(res.status).toBe(401);
    expect(corsHeaderNames(res)).toEqual([]);
  });

  it.each([...KEY_ROUTES.map(([m, p]) => [p, m]), ["/v1/images/edits", "POST"], ["/v1/responses", "POST"]])(
    "OPTIONS %s answers 405 with an explanation, allow: %s and no CORS header",
    async (path, allow) => {
      const untouched = balanceGuard(t.gw, t.a.accountId);
      const res = await send(t.gw, path, {
        method: "OPTIONS",
        headers: { ...ORIGIN, "access-control-request-method": "POST", authorization: `Bearer ${t.a.key}` },
      });
      const err = await expectError(res, 405, "method_not_allowed");
      expect(res.headers.get("allow")).toBe(allow as string);
      expect(err.message).toContain("browser");
      expect(corsHeaderNames(res)).toEqual([]);
      untouched();
    },
  );
});

describe("other answers", () => {
  it("an unknown /v1 path sends no CORS header", async () => {
    const res = await send(t.gw, "/v1/nope", { headers: ORIGIN });
    expect(res.status).toBe(404);
    expect(corsHeaderNames(res)).toEqual([]);
  });
});
