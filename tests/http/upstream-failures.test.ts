import { afterAll, beforeAll, beforeEach, describe, expect, it } from "bun:test";
import { events } from "../../src/core/events.ts";
import { Health } from "../../src/relay/health.ts";
import { startGatewayOnMock, type TestGateway } from "../support/gateway.ts";
import { anthropicError, openaiError, type MockUpstream } from "../support/mock-upstream.ts";
import { postWithApiKey, sqlGet } from "../support/keyed.ts";
import { errorOf } from "../support/errors.ts";

// Issue 13: every upstream failure is one event line for the operator, a provider refusing the
// gateway's own key is named as such, and the request log names the route that failed.

const PRICES = { input: 3, output: 15 };
let up: MockUpstream;
let gw: TestGateway;
let stop: () => Promise<void>;
let key: string;
let lines: Record<string, unknown>[] = [];
let restore: () => void;

beforeAll(async () => {
  ({ up, gw, stop } = await startGatewayOnMock({
    openai: true,
    limits: { default_rpm: 10_000 },
    models: [
      { id: "solo", modalities: ["text"], endpoints: ["messages", "chat.completions"], pricing: PRICES, routes: [{ provider: "anthropic", model: "solo-up" }] },
      {
        id: "pair",
        modalities: ["text"],
        endpoints: ["messages", "chat.completions"],
        pricing: PRICES,
        routes: [
          { provider: "anthropic", model: "pair-first" },
          { provider: "openai", model: "pair-second" },
        ],
      },
      { id: "gpt-solo", modalities: ["text"], endpoints: ["chat.completions"], pricing: PRICES, routes: [{ provider: "openai", model: "gpt-solo-up" }] },
      { id: "img", modalities: ["image"], endpoints: ["images.generations"], pricing: { per_image: 0.04 }, routes: [{ provider: "openai", model: "img-up" }] },
    ],
  }));
  key = (await gw.account(100)).key;
  restore = events.redirect((line) => lines.push(JSON.parse(line) as Record<string, unknown>));
});
// Each test scripts its own failures: no open circuit breaker or leftover script from the one before.
beforeEach(() => {
  up.reset();
  Object.assign(gw.services, { health: new Health() });
});
afterAll(async () => {
  restore();
  await stop();
});

const ask = (model: string) => ({ model, max_tokens: 20, messages: [{ role: "user", content: "hi" }] });
const idOf = (res: Response) => res.headers.get("x-gateway-request-id")!;
const eventsOf = (id: string) => lines.filter((l) => l.request_id === id);
const rowOf = (id: string) => sqlGet<Record<string, unknown>>(gw, "SELECT provider, upstream_model, attempts, status, error_code FROM request_logs WHERE request_id = ?", id);

describe("the operator's event log", () => {
  it("writes one line per failed route attempt, with request id, route, provider, upstream status and reason", async () => {
    up.script({ kind: "error", status: 503 }, { kind: "text", text: "from second" });
    const res = await postWithApiKey(gw, "/v1/messages", ask("pair"), key);
    expect(res.status).toBe(200);
    expect(eventsOf(idOf(res))).toEqual([
      expect.objectContaining({ level: "warn", event: "upstream_failed", route: "anthropic/pair-first", provider: "anthropic", upstream_status: 503 }),
    ]);
    expect(String(eventsOf(idOf(res))[0]!.reason)).toStartWith("HTTP 503");
  });

  it("writes a line for an upstream's own error event in the middle of a stream", async () => {
    up.script({ kind: "fail_mid_stream", afterEvents: 4, mode: "error_event" });
    const res = await postWithApiKey(gw, "/v1/messages", { ...ask("solo"), stream: true }, key);
    expect(await res.text()).toContain("event: error");
    expect(eventsOf(idOf(res))).toContainEqual(
      expect.objectContaining({ event: "upstream_failed", route: "anthropic/solo-up", reason: "the upstream sent an error event mid-stream" }),
    );
  });

  it("writes a line for a connection error, without an upstream status", async () => {
    up.script({ kind: "drop_before_headers" }, { kind: "text", text: "from second" });
    const res = await postWithApiKey(gw, "/v1/messages", ask("pair"), key);
    expect(res.status).toBe(200);
    const [e] = eventsOf(idOf(res));
    expect(e).toMatchObject({ event: "upstream_failed", route: "anthropic/pair-first" });
    expect(e!.upstream_status).toBeUndefined();
    expect(String(e!.reason).length).toBeGreaterThan(0);
  });

  it("writes a timeout as such", async () => {
    const config = gw.services.providers.get("anthropic")!.config;
    config.timeout_ms = 50;
    try {
      up.script({ kind: "hang", ms: 1000 }, { kind: "text", text: "from second" });
      const res = await postWithApiKey(gw, "/v1/messages", ask("pair"), key);
      expect(res.status).toBe(200);
      expect(eventsOf(idOf(res))[0]).toMatchObject({ event: "upstream_failed", route: "anthropic/pair-first", reason: "timeout: no answer within 50 ms" });
    } finally {
      delete config.timeout_ms;
    }
  });

  it("writes each failed attempt and then the 502 the gateway answered, all under the client's request id", async () => {
    up.script({ kind: "error", status: 500 }, { kind: "error", status: 500 });
    const res = await postWithApiKey(gw, "/v1/messages", ask("pair"), key);
    expect(res.status).toBe(502);
    const id = idOf(res);
    expect((await errorOf(res)).request_id).toBe(id);
    expect(eventsOf(id).map((e) => [e.event, e.route ?? null])).toEqual([
      ["upstream_failed", "anthropic/pair-first"],
      ["upstream_failed", "openai/pair-second"],
      ["gateway_error", "openai/pair-second"],
    ]);
    expect(eventsOf(id)[2]).toMatchObject({ status: 502, code: "upstream_unavailable", provider: "openai", upstream_status: 500 });
  });

  it("never writes the prompt or the provider's key", async () => {
    up.script({ kind: "error", status: 500, body: anthropicError("api_error", "echo: secret-prompt-4471 sk-ant-upstream") });
    const res = await postWithApiKey(gw, "/v1/messages", { ...ask("solo"), messages: [{ role: "user", content: "secret-prompt-4471" }] }, key);
    expect(res.status).toBe(502);
    expect(eventsOf(idOf(res)).length).toBeGreaterThan(0);
    const text = JSON.stringify(eventsOf(idOf(res)));
    expect(text).not.toContain("secret-prompt-4471");
    expect(text).not.toContain("sk-ant-upstream");
    expect(text).not.toContain(key);
  });
});

describe("a non-streamed answer that cannot be read", () => {
  it("cut mid-way is that route's failure: the next route serves it", async () => {
    up.script({ kind: "fail_mid_stream", afterEvents: 0, mode: "drop" }, { kind: "text", text: "from second" });
    const res = await postWithApiKey(gw, "/v1/messages", ask("pair"), key);
    expect(res.status).toBe(200);
    expect(eventsOf(idOf(res))[0]).toMatchObject({ event: "upstream_failed", route: "anthropic/pair-first", reason: expect.stringContaining("answer cut") });
  });

  it("not JSON answers 502 upstream_unavailable, not 500, and the event does not quote the body", async () => {
    up.script({ kind: "raw", status: 200, body: "secret-completion-9912 is not json" });
    const res = await postWithApiKey(gw, "/v1/messages", ask("solo"), key);
    expect(res.status).toBe(502);
    expect((await errorOf(res)).code).toBe("upstream_unavailable");
    const mine = eventsOf(idOf(res));
    expect(mine[0]).toMatchObject({ event: "upstream_failed", reason: expect.stringContaining("not a JSON object") });
    expect(JSON.stringify(mine)).not.toContain("secret-completion-9912");
  });

  it("from an image route answers 502, not 500", async () => {
    up.script({ kind: "raw", status: 200, body: "{not json" });
    const res = await postWithApiKey(gw, "/v1/images/generations", { model: "img", prompt: "a square" }, key);
    expect(res.status).toBe(502);
  });
});

describe("a provider that rejects the gateway's own key", () => {
  it("is logged as the operator's misconfiguration, naming the provider and its config entry", async () => {
    up.script({ kind: "error", status: 401, body: anthropicError("authentication_error", "invalid x-api-key") });
    const res = await postWithApiKey(gw, "/v1/messages", ask("solo"), key);
    const [e] = eventsOf(idOf(res));
    expect(e).toMatchObject({ level: "error", event: "provider_key_rejected", provider: "anthropic", route: "anthropic/solo-up", upstream_status: 401 });
    expect(e!.msg).toBe("the provider rejected the gateway's key for provider anthropic: check providers[0].api_key");
  });

  it("passes the vendor's error through to the client unchanged, as the spec says", async () => {
    up.script({ kind: "error", status: 401, body: anthropicError("authentication_error", "invalid x-api-key") });
    const res = await postWithApiKey(gw, "/v1/messages", ask("solo"), key);
    expect(res.status).toBe(401);
    expect(await errorOf(res)).toMatchObject({ type: "authentication_error", message: "invalid x-api-key" });
  });

  it("counts a 403 permission_error as the gateway's key, and a 403 region block as not", async () => {
    up.script({ kind: "error", status: 403, body: openaiError("Project does not have access to model", "permission_error", "model_not_found") });
    const denied = await postWithApiKey(gw, "/v1/chat/completions", ask("gpt-solo"), key);
    expect(eventsOf(idOf(denied))[0]).toMatchObject({ event: "provider_key_rejected", provider: "openai", msg: expect.stringContaining("providers[1].api_key") });
    up.script({ kind: "error", status: 403, body: openaiError("Country, region, or territory not supported", "request_forbidden", "unsupported_country_region_territory") });
    const region = await postWithApiKey(gw, "/v1/chat/completions", ask("gpt-solo"), key);
    expect(eventsOf(idOf(region))[0]).toMatchObject({ event: "upstream_failed", upstream_status: 403 });
  });
});

describe("a provider that does not know the route's upstream model (retired, or misspelt in the config)", () => {
  it("is that route's failure: the next route serves the published model", async () => {
    up.script({ kind: "error", status: 404, body: anthropicError("not_found_error", "model: pair-first") }, { kind: "text", text: "from second" });
    const res = await postWithApiKey(gw, "/v1/messages", ask("pair"), key);
    expect(res.status).toBe(200);
    expect(eventsOf(idOf(res))[0]).toMatchObject({ event: "upstream_failed", route: "anthropic/pair-first", upstream_status: 404 });
  });

  it("answers 502 upstream_unavailable when no route is left, not a 404 model_not_found for a model the catalog publishes", async () => {
    up.script({ kind: "error", status: 404, body: openaiError("The model `gpt-solo-up` does not exist or you do not have access to it.", "invalid_request_error", "model_not_found") });
    const res = await postWithApiKey(gw, "/v1/chat/completions", ask("gpt-solo"), key);
    expect(res.status).toBe(502);
    const err = await errorOf(res);
    expect(err.code).toBe("upstream_unavailable");
    expect(err.message).not.toContain("gpt-solo-up");
  });

  it("is the route's failure too when the 404 is no vendor's error body (a base URL with a wrong path): the next route serves", async () => {
    up.script({ kind: "raw", status: 404, body: "<html>Not Found</html>" }, { kind: "text", text: "from second" });
    const res = await postWithApiKey(gw, "/v1/messages", ask("pair"), key);
    expect(res.status).toBe(200);
  });
});

describe("the request log of a request whose routes all failed", () => {
  it("names the provider and route last tried (messages)", async () => {
    up.script({ kind: "error", status: 500 });
    const res = await postWithApiKey(gw, "/v1/messages", ask("solo"), key);
    expect(rowOf(idOf(res))).toEqual({ provider: "anthropic", upstream_model: "solo-up", attempts: 1, status: 502, error_code: "upstream_unavailable" });
  });

  it("names the second route when both failed (chat completions)", async () => {
    up.script({ kind: "error", status: 500 }, { kind: "drop_before_headers" });
    const res = await postWithApiKey(gw, "/v1/chat/completions", ask("pair"), key);
    expect(rowOf(idOf(res))).toMatchObject({ provider: "openai", upstream_model: "pair-second", attempts: 2, status: 502 });
  });

  it("names the route of a failed responses request", async () => {
    up.script({ kind: "error", status: 500 });
    const res = await postWithApiKey(gw, "/v1/responses", { model: "gpt-solo", input: "hi", max_output_tokens: 20 }, key);
    expect(res.status).toBe(502);
    expect(rowOf(idOf(res))).toMatchObject({ provider: "openai", upstream_model: "gpt-solo-up", attempts: 1 });
  });

  it("names the route of a failed image generation", async () => {
    up.script({ kind: "error", status: 500 });
    const res = await postWithApiKey(gw, "/v1/images/generations", { model: "img", prompt: "a square" }, key);
    expect(res.status).toBe(502);
    expect(rowOf(idOf(res))).toMatchObject({ provider: "openai", upstream_model: "img-up", attempts: 1, status: 502 });
  });

  it("names the route a vendor's refusal came from", async () => {
    up.script({ kind: "error", status: 400, body: anthropicError("invalid_request_error", "bad") });
    const res = await postWithApiKey(gw, "/v1/messages", ask("solo"), key);
    expect(rowOf(idOf(res))).toMatchObject({ provider: "anthropic", upstream_model: "solo-up", status: 400 });
  });
});
