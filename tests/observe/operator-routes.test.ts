import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { postWithApiKey } from "../support/keyed.ts";
import { errorOf } from "../support/errors.ts";
import { rawRequest } from "../support/raw-http.ts";
import { hostname } from "node:os";

// Issue 13, "Logs, metrics, health": GET /healthz, /readyz, /metrics and /openapi.json.

const chat = { model: "demo", max_tokens: 20, messages: [{ role: "user", content: "hi" }] };

describe("health", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(() => gw.stop());

  it("GET /healthz answers 200 while the process is alive", async () => {
    const res = await fetch(`${gw.url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
  });

  it("GET /readyz answers 200 when the database is writable and the product not paused", async () => {
    const res = await fetch(`${gw.url}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ready" });
  });

  it("GET /readyz answers 503 product_paused while paused", async () => {
    gw.services.settings.setPaused(true);
    try {
      const res = await fetch(`${gw.url}/readyz`);
      expect(res.status).toBe(503);
      expect((await errorOf(res)).code).toBe("product_paused");
    } finally {
      gw.services.settings.setPaused(false);
    }
  });

  it("GET /readyz answers 503 database_unavailable when the database cannot be written", async () => {
    gw.services.db.$client.exec("PRAGMA query_only = ON");
    try {
      const res = await fetch(`${gw.url}/readyz`);
      expect(res.status).toBe(503);
      expect((await errorOf(res)).code).toBe("database_unavailable");
    } finally {
      gw.services.db.$client.exec("PRAGMA query_only = OFF");
    }
    expect((await fetch(`${gw.url}/readyz`)).status).toBe(200);
  });
});

describe("GET /metrics with [server] metrics = \"loopback\" (the default)", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ limits: { default_rpm: 2 } });
  });
  afterAll(() => gw.stop());

  it("serves the Prometheus text format to a loopback caller, with requests, tokens, cost, holds, breakers and batches", async () => {
    const a = await gw.account(5);
    for (let i = 0; i < 3; i++) await (await postWithApiKey(gw, "/v1/chat/completions", chat, a.key)).text();
    const res = await fetch(`${gw.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/plain");
    const text = await res.text();
    expect(text).toContain('gateway_requests_total{path="/v1/chat/completions",model="demo-text-1",status="200"} 2');
    expect(text).toContain('gateway_rate_limit_refusals_total{path="/v1/chat/completions"} 1');
    expect(text).toMatch(/gateway_tokens_total\{model="demo-text-1",kind="output"\} \d+/);
    expect(text).toMatch(/gateway_cost_usd_total\{model="demo-text-1"\} [0-9.e-]+/);
    expect(text).toContain("gateway_holds_open 0");
    expect(text).toContain("gateway_holds_usd 0");
    expect(text).toContain('gateway_route_state{route="demo/demo-text"} 0');
    expect(text).toMatch(/gateway_upstream_latency_seconds_count\{route="demo\/demo-text"\} 2/);
    expect(text).toMatch(/gateway_group_commit_batch_size_count \d+/);
  });

  it("labels requests by published route, so unknown paths and model ids add no series", async () => {
    for (const p of ["/v1/nope-1", "/v1/nope-2", "/v1/models/x-1", "/v1/models/x-2"]) await (await fetch(`${gw.url}${p}`)).text();
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    expect(text).toContain('gateway_requests_total{path="(unknown)",model="",status="404"} 2');
    expect(text).toContain('gateway_requests_total{path="/v1/models/{id}",model="",status="404"} 2');
    expect(text).not.toContain("nope-1");
  });

  it("refuses a request that came through a proxy (X-Forwarded-For), since every proxied caller looks local", async () => {
    const res = await fetch(`${gw.url}/metrics`, { headers: { "x-forwarded-for": "203.0.113.9" } });
    expect(res.status).toBe(403);
    expect((await errorOf(res)).code).toBe("ip");
  });

  it("refuses a proxied request that carries only X-Real-IP, as many nginx configurations send it", async () => {
    const res = await rawRequest(gw.port, { method: "GET", target: "/metrics", headers: [["x-real-ip", "203.0.113.9"]] });
    expect(res.status).toBe(403);
    expect(JSON.parse(res.text()).error.code).toBe("ip");
  });

  it("refuses a loopback caller whose Host is another site's name (a DNS-rebinding page in this machine's browser)", async () => {
    const res = await rawRequest(gw.port, { method: "GET", target: "/metrics", headers: [["host", `rebind.example:${gw.port}`]] });
    expect(res.status).toBe(403);
    const error = JSON.parse(res.text()).error;
    expect(error.code).toBe("ip");
    expect(error.message).toContain(`names the host rebind.example:${gw.port}: call it as 127.0.0.1 or localhost`);
  });

  it("serves a loopback caller that names the host localhost, as a scrape config may", async () => {
    const res = await rawRequest(gw.port, { method: "GET", target: "/metrics", headers: [["host", `localhost:${gw.port}`]] });
    expect(res.status).toBe(200);
  });

  it("serves a loopback caller that names this machine's own host name", async () => {
    const res = await rawRequest(gw.port, { method: "GET", target: "/metrics", headers: [["host", `${hostname()}:${gw.port}`]] });
    expect(res.status).toBe(200);
  });
});

describe("GET /metrics with a bearer token", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ server: { metrics: "scrape-secret-1" } });
  });
  afterAll(() => gw.stop());

  it("answers 401 without the token", async () => {
    const res = await fetch(`${gw.url}/metrics`);
    expect(res.status).toBe(401);
    expect((await errorOf(res)).code).toBe("no-key");
  });

  it("answers 401 with another token", async () => {
    expect((await fetch(`${gw.url}/metrics`, { headers: { authorization: "Bearer scrape-secret-2" } })).status).toBe(401);
  });

  it("serves the metrics with the token, from any address", async () => {
    const res = await fetch(`${gw.url}/metrics`, { headers: { authorization: "Bearer scrape-secret-1", "x-forwarded-for": "203.0.113.9" } });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("gateway_holds_open");
  });
});

describe("GET /metrics with [server] metrics = \"off\"", () => {
  it("answers 404", async () => {
    const gw = await startTestGateway({ server: { metrics: "off" } });
    try {
      expect((await fetch(`${gw.url}/metrics`)).status).toBe(404);
    } finally {
      await gw.stop();
    }
  });
});

describe("GET /openapi.json", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(() => gw.stop());

  it("describes the /v1 routes and /api/pricing, with the request schemas the routes validate", async () => {
    const res = await fetch(`${gw.url}/openapi.json`);
    expect(res.status).toBe(200);
    const spec = (await res.json()) as { openapi: string; paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: { required?: string[] } }> } }>> };
    expect(spec.openapi).toStartWith("3.");
    for (const path of ["/v1/messages", "/v1/chat/completions", "/v1/responses", "/v1/messages/count_tokens", "/v1/images/generations", "/v1/images/edits", "/v1/me", "/v1/models", "/api/pricing", "/status"]) {
      expect(Object.keys(spec.paths)).toContain(path.replace(":id", "{id}"));
    }
    expect(spec.paths["/v1/messages"]!.post!.requestBody!.content["application/json"]!.schema.required).toEqual(expect.arrayContaining(["model", "messages", "max_tokens"]));
    expect(Object.keys(spec.paths)).not.toContain("/metrics");
  });
});

describe("POST /reload", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ server: { metrics: "scrape-secret-1" } });
  });
  afterAll(() => gw.stop());

  it("is reached from this machine without the metrics token (a test config has no file: refused, 422, one line)", async () => {
    const res = await fetch(`${gw.url}/reload`, { method: "POST" });
    expect(res.status).toBe(422);
    const body = (await res.json()) as { reloaded: boolean; error: string };
    expect(body.reloaded).toBe(false);
    expect(body.error).toStartWith("test config: cannot read the config file");
  });

  it("refuses a loopback caller whose Host is another site's name (DNS rebinding), and reloads nothing", async () => {
    const res = await rawRequest(gw.port, { method: "POST", target: "/reload", headers: [["host", "rebind.example"]] });
    expect(res.status).toBe(403);
    expect(JSON.parse(res.text()).error.code).toBe("ip");
  });

  it("refuses a proxied caller, even with the metrics token", async () => {
    const res = await fetch(`${gw.url}/reload`, { method: "POST", headers: { authorization: "Bearer scrape-secret-1", "x-forwarded-for": "203.0.113.9" } });
    expect(res.status).toBe(403);
    expect((await errorOf(res)).code).toBe("ip");
  });
});
