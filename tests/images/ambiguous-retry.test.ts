import { afterAll, beforeAll, beforeEach, describe, expect, it } from "bun:test";
import OpenAI from "openai";
import { errorOf, expectError } from "../support/errors.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { postWithApiKey } from "../support/keyed.ts";
import { stalledBody, startRawUpstream, type RawUpstream } from "../support/raw-upstream.ts";

// An image upstream that sends its headers and a first byte, then stalls: the gateway cannot know
// whether the provider generated (and billed) the image, so it answers 502 ambiguous_upstream_result.
// Neither the official SDK's automatic retries nor a retry with the same Idempotency-Key may send
// the request upstream again.

const IDLE_MS = 300;
let raw: RawUpstream;
let gw: TestGateway;

beforeAll(async () => {
  raw = await startRawUpstream();
  gw = await startTestGateway({
    providers: [{ id: "stall", kind: "openai", base_url: `${raw.url}/v1`, api_key: "sk-up", idle_timeout_ms: IDLE_MS }],
    models: [{ id: "img", modalities: ["image"], endpoints: ["images.generations", "images.edits"], pricing: { per_image: 0.04 }, routes: [{ provider: "stall", model: "up-img" }] }],
  });
  raw.handle = (_req, rec) => new Response(stalledBody(rec, ['{"created":1,"data":[{"b64_json":"iVBO']), { headers: { "content-type": "application/json" } });
});
afterAll(async () => {
  await gw.stop();
  await raw.stop();
});
beforeEach(() => {
  raw.requests.length = 0;
});

const generations = () => raw.requests.filter((r) => r.path === "/v1/images/generations").length;

describe("an image request whose answer stalls after the headers", () => {
  it("is sent upstream once by the official openai SDK with its default retries", async () => {
    const a = await gw.account(5);
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: a.key, timeout: 30_000 });
    const err = (await client.images.generate({ model: "img", prompt: "a cat" }).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect([err.status, err.headers?.get("x-should-retry")]).toEqual([502, "false"]);
    expect(generations()).toBe(1);
    expect(gw.money(a.accountId)).toMatchObject({ balance: 5_000_000_000, openHolds: 0 });
  });

  it("replays the 502 to a retry with the same Idempotency-Key instead of running it again", async () => {
    const a = await gw.account(5);
    const send = () => postWithApiKey(gw, "/v1/images/generations", { model: "img", prompt: "a dog" }, a.key, { "idempotency-key": "img-once" });
    const first = await send();
    const firstError = await errorOf(first);
    const again = await send();
    expect([again.status, again.headers.get("idempotent-replayed"), again.headers.get("x-should-retry")]).toEqual([502, "true", "false"]);
    expect(await errorOf(again)).toEqual({ ...firstError, request_id: again.headers.get("x-gateway-request-id")! });
    expect(firstError.code).toBe("ambiguous_upstream_result");
    expect(generations()).toBe(1);
    expect(gw.money(a.accountId)).toMatchObject({ balance: 5_000_000_000, openHolds: 0 });
  });

  it("names in the replayed 502's body the request id its own headers carry", async () => {
    const a = await gw.account(5);
    const send = () => postWithApiKey(gw, "/v1/images/generations", { model: "img", prompt: "a bird" }, a.key, { "idempotency-key": "img-id" });
    await send();
    const again = await send();
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    await expectError(again, 502, "ambiguous_upstream_result");
  });
});
