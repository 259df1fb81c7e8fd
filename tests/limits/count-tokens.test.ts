import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { estimateOf, ledgerRows, postWithApiKey } from "../support/keyed.ts";
import { errorOf } from "../support/errors.ts";
import { BODY_LIMIT_BYTES } from "../../src/wire/body-limit.ts";

// Spec: POST /v1/messages/count_tokens requires a key, is free of charge, has its own 60/min limit,
// and answers the byte estimate that also sizes reservations.
let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(() => gw.stop());

const BODY = {
  model: "demo",
  system: "You are terse.",
  messages: [{ role: "user", content: "How many tokens is this, roughly? ".repeat(20) }],
  tools: [{ name: "lookup", description: "look something up", input_schema: { type: "object", properties: { q: { type: "string" } } } }],
};
const count = (key: string | null, body: unknown = BODY) => postWithApiKey(gw, "/v1/messages/count_tokens", body, key);

describe("POST /v1/messages/count_tokens", () => {
  it("answers input_tokens and a gateway block saying the estimate is byte-based and not measured", async () => {
    const a = await gw.account(1);
    const res = await count(a.key);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      input_tokens: estimateOf(BODY),
      gateway: { exact: false, method: "byte_estimate", typical_error_pct: null },
    });
  });

  it("estimates by the plain rule: ⌈(3·bytes − characters) / 8⌉, 4 bytes a token for ASCII, more for multi-byte text", async () => {
    const a = await gw.account(1);
    const body = { model: "demo", messages: [{ role: "user", content: "ééé€" }] }; // 2 + 2 + 2 + 3 bytes
    const text = JSON.stringify(body);
    const bytes = new TextEncoder().encode(text).length;
    const res = await count(a.key, body);
    expect(((await res.json()) as { input_tokens: number }).input_tokens).toBe(Math.ceil((3 * bytes - text.length) / 8));
  });

  it("requires a key: 401 no-key without one", async () => {
    const res = await count(null);
    expect(res.status).toBe(401);
    expect((await errorOf(res)).code).toBe("no-key");
  });

  it("charges nothing, holds nothing and writes no ledger row", async () => {
    const a = await gw.account(1);
    for (let i = 0; i < 5; i++) await (await count(a.key)).arrayBuffer();
    expect(gw.money(a.accountId)).toEqual({ balance: 1e9, reserved: 0, ledgerSum: 1e9, openHolds: 0 });
    expect(ledgerRows(gw, a.accountId).map((r) => r.kind)).toEqual(["registration_credit"]);
  });

  it("works for an account with nothing left to spend", async () => {
    const a = await gw.account(0);
    expect((await count(a.key)).status).toBe(200);
  });

  it("still applies the key's restrictions: a model outside the allow-list gets 403 model", async () => {
    const a = await gw.account(1, { models: ["demo-image-1"] });
    const res = await count(a.key);
    expect(res.status).toBe(403);
    expect((await errorOf(res)).code).toBe("model");
  });

  it("refuses an unknown model with 404 model_not_found and a missing messages field with 400", async () => {
    const a = await gw.account(1);
    expect((await count(a.key, { ...BODY, model: "nope" })).status).toBe(404);
    const res = await count(a.key, { model: "demo" });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).code).toBe("invalid_request");
  });

  it("needs no max_tokens", async () => {
    const a = await gw.account(1);
    expect((await count(a.key, { model: "demo", messages: [{ role: "user", content: "hi" }] })).status).toBe(200);
  });
});

// The same body as /v1/messages, so the same limit (docs/api.md#limits), as Anthropic's two routes
// share theirs: a turn the gateway would send can always be counted first.
describe("POST /v1/messages/count_tokens and the body limit", () => {
  const sized = (bytes: number) => {
    const base = JSON.stringify({ model: "demo", messages: [{ role: "user", content: "" }] });
    return JSON.stringify({ model: "demo", messages: [{ role: "user", content: "a".repeat(bytes - base.length) }] });
  };

  it("counts a body of 20 MiB, the most /v1/messages takes", async () => {
    const a = await gw.account(1);
    const res = await postWithApiKey(gw, "/v1/messages/count_tokens", JSON.parse(sized(BODY_LIMIT_BYTES)), a.key);
    expect(res.status).toBe(200);
  });

  it("refuses a body over 20 MiB with 413 request_too_large naming the limit, as /v1/messages does", async () => {
    const a = await gw.account(1);
    const body = JSON.parse(sized(BODY_LIMIT_BYTES + 1));
    for (const path of ["/v1/messages/count_tokens", "/v1/messages"]) {
      const res = await postWithApiKey(gw, path, { ...body, max_tokens: path === "/v1/messages" ? 16 : undefined }, a.key);
      expect(res.status).toBe(413);
      const e = await errorOf(res);
      expect(e.code).toBe("request_too_large");
      expect(e.message).toContain("20 MiB");
    }
  });
});
