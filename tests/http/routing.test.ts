import { afterEach, beforeAll, describe, expect, it } from "bun:test";
import { ENDPOINTS } from "../../src/http/endpoints.ts";
import { startAppGateway } from "../support/app.ts";
import { balanceGuard, fundedGateway, headersOf, hi, keyHeaders, postJson, send } from "../support/http.ts";
import { expectError } from "../support/errors.ts";

// Spec, Endpoints › Rules 4–6 and the error object: paths, methods and the request id, in-process.

let untouched: () => void;
const t = fundedGateway({ start: startAppGateway });

// Every request in this file fails except where a test says otherwise; none may move money.
describe("failed requests", () => {
  beforeAll(() => {
    untouched = balanceGuard(t.gw, t.a.accountId);
  });
  afterEach(() => untouched());

  describe("the error object", () => {
    it("has exactly the four fields type, code, message and request_id", async () => {
      const res = await send(t.gw, "/v1/messages", { method: "POST", body: "{}" });
      await expectError(res, 401, "no-key", "authentication_error");
    });

    it("carries a request_id prefixed gw_ that equals the x-gateway-request-id header", async () => {
      const res = await send(t.gw, "/v1/nope");
      const err = await expectError(res, 404, "endpoint_not_found");
      expect(err.request_id).toMatch(/^gw_[0-9a-z]+$/);
      expect(res.headers.get("x-gateway-request-id")).toBe(err.request_id);
    });

    it("gives every answer its own request id", async () => {
      const ids = new Set<string>();
      for (let i = 0; i < 5; i++) ids.add((await send(t.gw, "/v1/nope")).headers.get("x-gateway-request-id")!);
      expect(ids.size).toBe(5);
    });
  });

  describe("unknown paths under /v1/", () => {
    it("answer 404 endpoint_not_found whose message lists every published route", async () => {
      const err = await expectError(await send(t.gw, "/v1/nope"), 404, "endpoint_not_found");
      for (const r of ENDPOINTS.filter((e) => e.published && !e.dashboard)) expect(err.message).toContain(`${r.method} ${r.path}`);
    });

    it("include the unpublished embeddings route, whatever the method", async () => {
      const res = await postJson(t.gw, "/v1/embeddings", t.a.key, { model: "demo", input: "hi" });
      await expectError(res, 404, "endpoint_not_found");
    });

    it("include paths below a published route", async () => {
      await expectError(await postJson(t.gw, "/v1/messages/batches", t.a.key, {}), 404, "endpoint_not_found");
    });
  });

  describe("a known path with another method", () => {
    const cases: [string, string, string][] = [
      ["GET", "/v1/messages", "POST"],
      ["GET", "/v1/messages/count_tokens", "POST"],
      ["GET", "/v1/chat/completions", "POST"],
      ["PUT", "/v1/images/generations", "POST"],
      ["GET", "/v1/images/edits", "POST"],
      ["POST", "/v1/me", "GET"],
      ["POST", "/v1/models", "GET"],
      ["DELETE", "/v1/models/demo", "GET"],
    ];
    it.each(cases)("answers %s %s with 405 method_not_allowed and allow: %s", async (method, path, allow) => {
      const res = await send(t.gw, path, { method, headers: keyHeaders(t.a.key), body: method === "GET" ? undefined : "{}" });
      const err = await expectError(res, 405, "method_not_allowed");
      expect(res.headers.get("allow")).toBe(allow);
      expect(err.message).toContain(allow);
    });
  });

  describe("an operator's path left out by the config", () => {
    it("answers POST /metrics 404 endpoint_not_found while [server] metrics is off, the path being unknown then", async () => {
      const off = await startAppGateway({ server: { metrics: "off" } });
      try {
        await expectError(await send(off, "/metrics", { method: "POST" }), 404, "endpoint_not_found");
      } finally {
        await off.stop();
      }
    });
  });

  describe("x-gateway-request-id on failed answers", () => {
    it("is on a 401", async () => {
      const res = await send(t.gw, "/v1/me");
      expect(res.status).toBe(401);
      expect(res.headers.get("x-gateway-request-id")).toStartWith("gw_");
    });

    it("is on a 400", async () => {
      const res = await postJson(t.gw, "/v1/chat/completions", t.a.key, "{");
      expect(res.status).toBe(400);
      expect(res.headers.get("x-gateway-request-id")).toStartWith("gw_");
    });

    it("is on a 404 of an unknown model on a public route", async () => {
      const res = await send(t.gw, "/v1/models/nope");
      expect(res.status).toBe(404);
      expect(res.headers.get("x-gateway-request-id")).toStartWith("gw_");
    });
  });
});

describe("x-gateway-request-id on successful answers", () => {
  it("is on a JSON answer of a key route", async () => {
    const res = await postJson(t.gw, "/v1/chat/completions", t.a.key, { model: "demo", max_tokens: 16, messages: hi });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-gateway-request-id")).toStartWith("gw_");
  });

  it("is on a streamed answer, sent before the first event", async () => {
    const res = await postJson(t.gw, "/v1/chat/completions", t.a.key, { model: "demo", max_tokens: 16, stream: true, messages: hi });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("text/event-stream");
    expect(res.headers.get("x-gateway-request-id")).toStartWith("gw_");
    expect(await res.text()).toContain("data: [DONE]");
  });

  it("is on the public /v1 routes", async () => {
    for (const path of ["/v1/models", "/v1/models/demo"]) {
      const res = await send(t.gw, path);
      expect(res.status).toBe(200);
      expect(headersOf(res)["x-gateway-request-id"]).toStartWith("gw_");
    }
  });
});
