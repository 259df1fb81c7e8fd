import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { hi, keyHeaders, postBody } from "../support/http.ts";

// Issue 14, wire fidelity: error bodies of the Messages dialect carry Anthropic's top-level
// "type": "error" beside the spec's four-field error object; the other routes keep the bare object.

let gw: TestGateway;
let poor: string;
beforeAll(async () => {
  gw = await startTestGateway({ limits: { default_rpm: 1000 } });
  poor = (await gw.account("0.000001")).key;
});
afterAll(() => gw.stop());

const expensive = { model: "demo-text-1", max_tokens: 4000, messages: hi };

/**
 * The check of the Vercel AI SDK's Anthropic provider, written out (vercel/ai
 * packages/anthropic/src/anthropic-error.ts): z.object({ type: z.literal("error"),
 * error: z.object({ type: z.string(), message: z.string() }) }); extra fields pass.
 */
function vercelAnthropicMessage(body: unknown): string | null {
  const b = body as { type?: unknown; error?: { type?: unknown; message?: unknown } } | null;
  if (b?.type !== "error" || typeof b.error?.type !== "string" || typeof b.error.message !== "string") return null;
  return b.error.message;
}

describe("error bodies on the Messages dialect", () => {
  it("carry type error beside the spec's four fields on /v1/messages", async () => {
    const res = await postBody(gw, "/v1/messages", expensive, keyHeaders(poor, { "anthropic-version": "2023-06-01" }));
    expect(res.status).toBe(402);
    const body = (await res.json()) as Record<string, any>;
    expect(body.type).toBe("error");
    expect(Object.keys(body.error).sort()).toEqual(["code", "message", "request_id", "type"]);
    expect(body.error).toMatchObject({ type: "insufficient_balance", code: "insufficient_balance" });
  });

  it("carry Anthropic's top-level request_id, the value of the request-id header", async () => {
    const res = await postBody(gw, "/v1/messages", expensive, keyHeaders(poor, { "anthropic-version": "2023-06-01" }));
    const body = (await res.json()) as { request_id?: string; error: { request_id: string } };
    expect(body.request_id).toBe(res.headers.get("request-id")!);
    expect(body.error.request_id).toBe(body.request_id!);
  });

  it("carry type error on /v1/messages/count_tokens", async () => {
    const res = await postBody(gw, "/v1/messages/count_tokens", { model: "demo-text-1", messages: hi }, { "content-type": "application/json" });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { type: string }).type).toBe("error");
  });

  it("satisfy the Vercel AI SDK's Anthropic error schema, so its message is shown", async () => {
    const res = await postBody(gw, "/v1/messages", expensive, keyHeaders(poor));
    expect(vercelAnthropicMessage(await res.json())).toContain("balance");
  });

  it("surface the message of a 402 through @anthropic-ai/sdk", async () => {
    const client = new Anthropic({ baseURL: gw.url, apiKey: poor, maxRetries: 0 });
    const err = (await client.messages.create({ ...expensive, messages: [{ role: "user", content: "hi" }] }).catch((e) => e)) as InstanceType<
      typeof Anthropic.APIError
    >;
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect(err.status).toBe(402);
    expect(err.message).toContain("balance");
    expect((err.error as { type: string }).type).toBe("error");
    expect(err.requestID).toStartWith("gw_");
  });
});

describe("error bodies on the other dialects", () => {
  it("stay the bare error object on /v1/chat/completions", async () => {
    const res = await postBody(gw, "/v1/chat/completions", expensive, keyHeaders(poor));
    expect(res.status).toBe(402);
    expect(Object.keys((await res.json()) as object)).toEqual(["error"]);
  });

  it("stay the bare error object on an unknown /v1 path", async () => {
    const res = await fetch(`${gw.url}/v1/messagesx`);
    expect(res.status).toBe(404);
    expect(Object.keys((await res.json()) as object)).toEqual(["error"]);
  });
});
