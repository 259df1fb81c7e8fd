import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { DEFAULT_MODELS } from "../../src/config/defaults.ts";
import { encodePng } from "../../src/upstreams/png.ts";
import { startAppGateway, type AppGateway } from "../support/app.ts";
import { balanceGuard, hi, keyHeaders, postJson, send } from "../support/http.ts";
import { readPngSize } from "../support/mock-images.ts";
import { expectError } from "../support/errors.ts";

// Spec, Endpoints: every row of the table answers, in-process. POST /v1/responses has its
// own suite (tests/responses).

const ORG_MODEL = {
  id: "org/model-x",
  modalities: ["text"],
  endpoints: ["chat.completions"],
  pricing: { input: 1, output: 2 },
  routes: [{ provider: "demo", model: "demo-text" }],
};

let gw: AppGateway;
beforeAll(async () => {
  gw = await startAppGateway({
    limits: { default_rpm: 1000 },
    providers: [{ id: "demo", kind: "demo" }],
    models: [...DEFAULT_MODELS, ORG_MODEL],
  });
});
afterAll(() => gw.stop());

type ModelView = { id: string; modalities: string[]; endpoints: string[] };

describe("GET /status", () => {
  it("answers the gateway status as JSON without a key", async () => {
    const res = await send(gw, "/status");
    expect(res.status).toBe(200);
    const body = (await res.json()) as { status: string; catalog_version: string };
    expect(body.status).toBe("ok");
    expect(body.catalog_version).toBeString();
  });
});

describe("GET /v1/models", () => {
  it("lists the published models with modalities and endpoints, without a key", async () => {
    const res = await send(gw, "/v1/models");
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as { data: ModelView[] };
    expect(data.map((m) => m.id)).toEqual(["demo-text-1", "demo-image-1", "org/model-x"]);
    expect(data[0]).toMatchObject({ modalities: ["text"], endpoints: ["messages", "chat.completions"] });
    expect(data[1]).toMatchObject({ modalities: ["image"], endpoints: ["images.generations", "images.edits"] });
  });

  it("never lists responses among a model's endpoints", async () => {
    const { data } = (await (await send(gw, "/v1/models")).json()) as { data: ModelView[] };
    for (const m of data) expect(m.endpoints).not.toContain("responses");
  });
});

describe("GET /v1/models/{id}", () => {
  it("returns one model in the shape of an element of the list", async () => {
    const { data } = (await (await send(gw, "/v1/models")).json()) as { data: ModelView[] };
    const res = await send(gw, "/v1/models/demo-text-1");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(data[0]!);
  });

  it("answers an alias with the canonical id", async () => {
    const res = await send(gw, "/v1/models/demo-text");
    expect(res.status).toBe(200);
    expect(((await res.json()) as ModelView).id).toBe("demo-text-1");
  });

  it("decodes a percent-encoded id", async () => {
    const res = await send(gw, "/v1/models/org%2Fmodel-x");
    expect(res.status).toBe(200);
    expect(((await res.json()) as ModelView).id).toBe("org/model-x");
  });

  it("reads an id holding a slash sent as is, as a model id is written (/v1/models/org/model-x)", async () => {
    const res = await send(gw, "/v1/models/org/model-x");
    expect(res.status).toBe(200);
    expect(((await res.json()) as ModelView).id).toBe("org/model-x");
  });

  it("reads the id without the trailing slash the other routes tolerate", async () => {
    const res = await send(gw, "/v1/models/demo-text/");
    expect(res.status).toBe(200);
    expect(((await res.json()) as ModelView).id).toBe("demo-text-1");
  });

  it("answers a malformed percent escape as an unknown model, not a server error", async () => {
    const err = await expectError(await send(gw, "/v1/models/%E0%A4%A"), 404, "model_not_found");
    expect(err.message).toContain("%E0%A4%A");
  });
});

describe("GET /api/pricing", () => {
  it("returns public prices and the catalog version", async () => {
    const res = await send(gw, "/api/pricing");
    expect(res.status).toBe(200);
    const body = (await res.json()) as { catalog_version: string; models: { id: string; input?: number; per_image?: number }[] };
    const status = (await (await send(gw, "/status")).json()) as { catalog_version: string };
    expect(body.catalog_version).toBe(status.catalog_version);
    expect(body.models.find((m) => m.id === "demo-text-1")).toMatchObject({ input: 1, output: 4 });
    expect(body.models.find((m) => m.id === "demo-image-1")).toMatchObject({ per_image: 0.01 });
  });

  it("names the gateway's own starting credit and minimum top-up, not fixed figures", async () => {
    const other = await startAppGateway({ providers: [{ id: "demo", kind: "demo" }], models: DEFAULT_MODELS, dashboard: { starting_credit_usd: 2.5 } });
    try {
      expect(await (await send(other, "/api/pricing")).json()).toMatchObject({ minimum_top_up_usd: 1, starting_balance_usd: 2.5 });
    } finally {
      await other.stop();
    }
  });

  // docs/pricing.md#service-and-long-context-tiers: Opus 4.6's fast mode above 200k is 60 / 225, not fast's 30 / 150.
  it("shows each service tier's long-context prices stacked as they are billed", async () => {
    const opus = {
      id: "opus-like", modalities: ["text"], endpoints: ["chat.completions"],
      pricing: { input: 5, output: 25 },
      pricing_tiers: [{ above_input_tokens: 200000, input: 10, output: 37.5 }],
      service_tiers: { fast: { input: 30, output: 150 } },
      routes: [{ provider: "demo", model: "demo-text" }],
    };
    const other = await startAppGateway({ providers: [{ id: "demo", kind: "demo" }], models: [opus] });
    try {
      const body = (await (await send(other, "/api/pricing")).json()) as { models: Record<string, any>[] };
      const fast = body.models[0]!.service_tiers.fast;
      expect(fast).toMatchObject({ input: 30, output: 150 });
      expect(fast.pricing_tiers).toHaveLength(1);
      expect(fast.pricing_tiers[0]).toMatchObject({ above_input_tokens: 200000, input: 60, output: 225 });
    } finally {
      await other.stop();
    }
  });

  it("names no starting credit when registration is closed", async () => {
    const other = await startAppGateway({ providers: [{ id: "demo", kind: "demo" }], models: DEFAULT_MODELS, dashboard: { registration: "closed" } });
    try {
      expect(await (await send(other, "/api/pricing")).json()).toMatchObject({ starting_balance_usd: 0 });
    } finally {
      await other.stop();
    }
  });
});

describe("POST /v1/messages", () => {
  it("answers a Messages response and charges its usage.cost_usd", async () => {
    const a = await gw.account(1);
    const res = await postJson(gw, "/v1/messages", a.key, { model: "demo", max_tokens: 64, messages: hi }, { "anthropic-version": "2023-06-01" });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { type: string; model: string; usage: { cost_usd: number } };
    expect(body).toMatchObject({ type: "message", model: "demo-text-1" });
    expect(body.usage.cost_usd).toBeGreaterThan(0);
    expect(gw.money(a.accountId).balance).toBe(1e9 - Math.round(body.usage.cost_usd * 1e9));
  });

  it("streams over SSE when asked", async () => {
    const a = await gw.account(1);
    const res = await postJson(gw, "/v1/messages", a.key, { model: "demo", max_tokens: 64, stream: true, messages: hi });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("text/event-stream");
    const text = await res.text();
    expect(text).toContain("event: message_start");
    expect(text).toContain("event: message_stop");
  });
});

describe("POST /v1/messages/count_tokens", () => {
  it("returns the byte estimate and charges nothing", async () => {
    const a = await gw.account(1);
    const untouched = balanceGuard(gw, a.accountId);
    const res = await postJson(gw, "/v1/messages/count_tokens", a.key, { model: "demo", messages: hi });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { input_tokens: number; gateway: unknown };
    expect(body.input_tokens).toBeGreaterThan(0);
    expect(body.gateway).toEqual({ exact: false, method: "byte_estimate", typical_error_pct: null });
    untouched();
  });
});

describe("POST /v1/chat/completions", () => {
  it("answers a Chat Completions response with usage.cost_usd", async () => {
    const a = await gw.account(1);
    const res = await postJson(gw, "/v1/chat/completions", a.key, { model: "demo", max_tokens: 64, messages: hi });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { object: string; model: string; usage: { cost_usd: number } };
    expect(body).toMatchObject({ object: "chat.completion", model: "demo-text-1" });
    expect(body.usage.cost_usd).toBeGreaterThan(0);
  });
});

describe("POST /v1/images/generations", () => {
  it("returns a real PNG of the requested size from the demo model and charges the per-image price", async () => {
    const a = await gw.account(1);
    const res = await postJson(gw, "/v1/images/generations", a.key, { model: "demo-image", prompt: "a red square", size: "64x32" });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: { b64_json: string }[]; usage: { cost_usd: number } };
    expect(body.data).toHaveLength(1);
    expect(readPngSize(Buffer.from(body.data[0]!.b64_json, "base64"))).toEqual({ width: 64, height: 32 });
    expect(body.usage.cost_usd).toBe(0.01);
    expect(gw.money(a.accountId).balance).toBe(0.99e9);
  });
});

describe("POST /v1/images/edits", () => {
  const source = (i: number) => new File([encodePng(8, 8, () => [i * 40, 0, 0])], `source-${i}.png`, { type: "image/png" });
  const editForm = (images: number) => {
    const form = new FormData();
    form.set("model", "demo-image-1");
    form.set("prompt", "combine them");
    form.set("size", "48x40");
    for (let i = 0; i < images; i++) form.append("image[]", source(i));
    return form;
  };
  const postForm = (key: string, form: FormData) =>
    send(gw, "/v1/images/edits", { method: "POST", headers: { authorization: `Bearer ${key}` }, body: form });

  it("edits multipart image[] files into a PNG of the requested size", async () => {
    const a = await gw.account(1);
    const res = await postForm(a.key, editForm(4));
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: { b64_json: string }[] };
    expect(readPngSize(Buffer.from(body.data[0]!.b64_json, "base64"))).toEqual({ width: 48, height: 40 });
  });

  it("refuses more than 4 source images with 400 invalid_request", async () => {
    const a = await gw.account(1);
    const untouched = balanceGuard(gw, a.accountId);
    const err = await expectError(await postForm(a.key, editForm(5)), 400, "invalid_request");
    expect(err.message).toContain("at most 4");
    untouched();
  });
});

describe("GET /v1/me", () => {
  it("shows the key's quota, the remaining balance and the limits", async () => {
    const a = await gw.account(3, { quotaNano: 2e9, rpm: 7 });
    const res = await send(gw, "/v1/me", { headers: keyHeaders(a.key) });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      key: { quota: { limit_usd: 2, spent_usd: 0, remaining_usd: 2 } },
      balance: { balance_usd: 3, spendable_usd: 3 },
      limits: { rpm: 7, count_tokens_rpm: 60, account_rpm: null, max_body_bytes: 20 * 1024 * 1024 },
    });
  });

  it("takes the key in x-api-key as well as in Authorization: Bearer", async () => {
    const a = await gw.account(1);
    const res = await send(gw, "/v1/me", { headers: { "x-api-key": a.key } });
    expect(res.status).toBe(200);
  });

  it("takes the key from Authorization: Bearer when x-api-key carries another vendor's key", async () => {
    // An Anthropic SDK given both an apiKey (the vendor's own, from the environment) and an
    // authToken (the gateway's) sends both headers.
    const a = await gw.account(1);
    const res = await send(gw, "/v1/me", { headers: { "x-api-key": "sk-ant-api03-vendor", authorization: `Bearer ${a.key}` } });
    expect(res.status).toBe(200);
  });
});
