import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import OpenAI from "openai";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";

// Spec, Base addresses: Chat Completions clients use {base_url}/v1, Messages clients {base_url}; both
// official SDKs must read the catalog unchanged. (@anthropic-ai/sdk 1.12 sends Authorization: Bearer.)

let gw: TestGateway;
let key: string;
beforeAll(async () => {
  gw = await startTestGateway();
  key = (await gw.account(1)).key;
});
afterAll(() => gw.stop());

const PUBLISHED = ["demo-text-1", "demo-image-1"];

describe("the openai SDK", () => {
  const client = () => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });

  it("lists the published models with models.list()", async () => {
    const ids: string[] = [];
    for await (const m of client().models.list()) ids.push(m.id);
    expect(ids).toEqual(PUBLISHED);
  });

  it("retrieves an alias as its canonical model with models.retrieve()", async () => {
    expect((await client().models.retrieve("demo")).id).toBe("demo-text-1");
  });

  it("raises NotFoundError with the gateway's request id for an unknown model", async () => {
    const err = (await client().models.retrieve("nope").catch((e) => e)) as InstanceType<typeof OpenAI.NotFoundError>;
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect(err.status).toBe(404);
    expect(err.requestID).toStartWith("gw_");
  });
});

describe("the @anthropic-ai/sdk SDK", () => {
  const client = () => new Anthropic({ baseURL: gw.url, apiKey: key, maxRetries: 0 });

  it("lists the published models with models.list()", async () => {
    const ids: string[] = [];
    for await (const m of client().models.list()) ids.push(m.id);
    expect(ids).toEqual(PUBLISHED);
  });

  it("retrieves an alias as its canonical model with models.retrieve()", async () => {
    const m = await client().models.retrieve("demo-text");
    expect(m.id).toBe("demo-text-1");
    expect(m.type).toBe("model");
  });

  it("reads every field of Anthropic's model object, the unknown ones null rather than absent", async () => {
    const m = await client().models.retrieve("demo-text-1");
    expect(m).toMatchObject({ display_name: "Demo text model", created_at: "2026-01-01T00:00:00.000Z", max_tokens: 8192, max_input_tokens: null, capabilities: null });
  });

  it("raises NotFoundError with the gateway's request id for an unknown model", async () => {
    const err = (await client().models.retrieve("nope").catch((e) => e)) as InstanceType<typeof Anthropic.NotFoundError>;
    expect(err).toBeInstanceOf(Anthropic.NotFoundError);
    expect(err.status).toBe(404);
    expect(err.requestID).toStartWith("gw_");
  });
});
