import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { postWithApiKey } from "../support/keyed.ts";

// Issue 14, item 12: an Idempotency-Key is scoped by endpoint. The same key and the same body sent to
// another endpoint is a new request there, never the other dialect's stored answer.

let gw: TestGateway;
let key: string;
beforeAll(async () => {
  gw = await startTestGateway({ limits: { default_rpm: 1000 } });
  key = (await gw.account(5)).key;
});
afterAll(() => gw.stop());

// Valid on both /v1/chat/completions and /v1/messages.
const body = { model: "demo-text-1", max_tokens: 16, messages: [{ role: "user", content: "hi" }] };

describe("an Idempotency-Key", () => {
  it("sent with the same body to another endpoint answers in that endpoint's dialect, not as a replay", async () => {
    const headers = { "idempotency-key": "scope-1", "anthropic-version": "2023-06-01" };
    const chat = await postWithApiKey(gw, "/v1/chat/completions", body, key, headers);
    expect(((await chat.json()) as { object: string }).object).toBe("chat.completion");
    const messages = await postWithApiKey(gw, "/v1/messages", body, key, headers);
    expect(messages.status).toBe(200);
    expect(messages.headers.get("idempotent-replayed")).toBeNull();
    expect(((await messages.json()) as { type: string }).type).toBe("message");
  });

  it("still replays on the endpoint it was first sent to", async () => {
    const headers = { "idempotency-key": "scope-2" };
    const first = (await (await postWithApiKey(gw, "/v1/messages", body, key, headers)).json()) as { id: string };
    await (await postWithApiKey(gw, "/v1/chat/completions", body, key, headers)).text();
    const again = await postWithApiKey(gw, "/v1/messages", body, key, headers);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(((await again.json()) as { id: string }).id).toBe(first.id);
  });

  it("still refuses a key over 255 characters, counting only the client's part", async () => {
    const ok = await postWithApiKey(gw, "/v1/messages", body, key, { "idempotency-key": "k".repeat(255) });
    expect(ok.status).toBe(200);
    const long = await postWithApiKey(gw, "/v1/messages", body, key, { "idempotency-key": "k".repeat(256) });
    expect(long.status).toBe(400);
  });
});
