import { describe, expect, it } from "bun:test";
import { ENDPOINTS } from "../../src/http/endpoints.ts";
import { fundedGateway, keyHeaders } from "../support/http.ts";
import { expectError } from "../support/errors.ts";

// Issue 15: one endpoint table (src/http/endpoints.ts) that Elysia's routes, 404/405, CORS, the
// OpenAPI document and body validation all read. The table against the spec's, then every row
// through the real server.

const t = fundedGateway({ guardEach: true });

// The model API of the spec's table; the dashboard's /api/ endpoints are published beside it (tests/api).
const published = ENDPOINTS.filter((e) => e.published && !e.dashboard);
const dashboard = ENDPOINTS.filter((e) => e.dashboard);
const operatorPaths = ENDPOINTS.filter((e) => !e.published).map((e) => e.path);
const concrete = (path: string) => path.replace("{id}", "demo-text-1");
const send = (method: string, path: string, body?: string) =>
  fetch(`${t.gw.url}${concrete(path)}`, { method, headers: keyHeaders(t.a.key), body });

describe("the table", () => {
  it("publishes the spec's endpoint table, in its order", () => {
    expect(published.map((e) => `${e.method} ${e.path} ${e.auth}`)).toEqual([
      "GET /status public",
      "GET /v1/models public",
      "GET /v1/models/{id} public",
      "GET /api/pricing public",
      "POST /v1/messages key",
      "POST /v1/messages/count_tokens key",
      "POST /v1/chat/completions key",
      "POST /v1/responses key",
      "POST /v1/images/generations key",
      "POST /v1/images/edits key",
      "GET /v1/me key",
    ]);
  });

  it("gives CORS to exactly the four public GETs", () => {
    expect(ENDPOINTS.filter((e) => e.cors).map((e) => e.path)).toEqual(["/status", "/v1/models", "/v1/models/{id}", "/api/pricing"]);
  });

  it("gives Anthropic's error envelope to exactly the Messages dialect's endpoints", () => {
    expect(ENDPOINTS.filter((e) => e.envelope === "messages").map((e) => e.path)).toEqual(["/v1/messages", "/v1/messages/count_tokens"]);
  });
});

describe("every published row, on the server", () => {
  it.each(published.map((e) => [e.method, e.path] as const))("answers %s %s (neither 404 nor 405)", async (method, path) => {
    const res = await send(method, path, method === "POST" ? "{}" : undefined);
    await res.arrayBuffer();
    expect([404, 405]).not.toContain(res.status);
  });

  it.each(published.map((e) => [e.path, e.method] as const))("answers another method on %s with 405 and allow: %s", async (path, method) => {
    const res = await send("PUT", path, "{}");
    await expectError(res, 405, "method_not_allowed");
    expect(res.headers.get("allow")).toBe(method);
  });

  const jsonRows = published.filter((e) => e.body === "json" && e.schema);
  it.each(jsonRows.map((e) => [e.path] as const))("checks the body of POST %s against the row's schema, naming the missing field", async (path) => {
    const err = await expectError(await send("POST", path, "{}"), 400, "invalid_request");
    expect(err.message).toStartWith("model: ");
  });
});

describe("the dashboard's rows", () => {
  const paths = [...new Set(dashboard.map((e) => e.path))];
  it.each(paths.map((p) => [p] as const))("answer a method %s does not take with 405 and allow naming the ones it does", async (path) => {
    const methods = dashboard.filter((e) => e.path === path).map((e) => e.method);
    const other = ["GET", "POST", "PUT", "PATCH", "DELETE"].find((m) => !methods.includes(m as never))!;
    const res = await fetch(`${t.gw.url}${path.replace("{id}", "1")}`, { method: other, headers: { origin: t.gw.url } });
    await expectError(res, 405, "method_not_allowed");
    expect(res.headers.get("allow")).toBe(methods.join(", "));
  });

  it("are left out of the model API's 404 list", async () => {
    const err = await expectError(await fetch(`${t.gw.url}/v1/nope`), 404, "endpoint_not_found");
    for (const e of dashboard) expect(err.message).not.toContain(`${e.method} ${e.path}`);
  });
});

describe("the operator's rows", () => {
  it("are left out of the 404's list of published routes", async () => {
    const err = await expectError(await fetch(`${t.gw.url}/v1/nope`), 404, "endpoint_not_found");
    for (const path of operatorPaths.filter((p) => p !== "/")) expect(err.message).not.toContain(path);
  });

  it("are left out of the OpenAPI document", async () => {
    const spec = (await (await fetch(`${t.gw.url}/openapi.json`)).json()) as { paths: Record<string, unknown> };
    for (const path of operatorPaths) expect(Object.keys(spec.paths)).not.toContain(path);
  });

  const otherMethod = (path: string) => (ENDPOINTS.find((e) => e.path === path)!.method === "POST" ? "GET" : "POST");
  // As /v1 answers another method (docs/api.md#rules, rule 5): the path is known, the method is not.
  it.each(operatorPaths.filter((p) => p !== "/"))("answer another method on %s with 405 method_not_allowed and allow, in the standard error shape", async (path) => {
    const method = otherMethod(path);
    const allow = ENDPOINTS.find((e) => e.path === path)!.method;
    const res = await fetch(`${t.gw.url}${path}`, { method });
    const err = await expectError(res, 405, "method_not_allowed");
    expect(res.headers.get("allow")).toBe(allow);
    expect(err.message).toBe(`Method ${method} is not allowed on ${path}; use ${allow}.`);
  });

  it("answer OPTIONS with 405 and allow, without the API-key routes' word on CORS", async () => {
    const res = await fetch(`${t.gw.url}/healthz`, { method: "OPTIONS" });
    const err = await expectError(res, 405, "method_not_allowed");
    expect(res.headers.get("allow")).toBe("GET");
    expect(err.message).not.toContain("API key");
  });

  // The OpenAPI document is the plugin's route, outside the table, yet a path the gateway serves like them.
  it.each(["POST", "DELETE", "OPTIONS"])("answer %s on /openapi.json with 405 method_not_allowed and allow: GET, as on the other operator paths", async (method) => {
    const res = await fetch(`${t.gw.url}/openapi.json`, { method });
    const err = await expectError(res, 405, "method_not_allowed");
    expect(res.headers.get("allow")).toBe("GET");
    expect(err.message).toBe(`Method ${method} is not allowed on /openapi.json; use GET.`);
  });

  it("carry no request id on a success", async () => {
    const res = await fetch(`${t.gw.url}/healthz`);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-gateway-request-id")).toBeNull();
  });
});
