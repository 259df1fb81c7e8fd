import { describe, expect, it } from "bun:test";
import { startAppGateway } from "../support/app.ts";
import { fundedGateway, hi, postJson, send } from "../support/http.ts";
import { expectError } from "../support/errors.ts";

// Spec, Errors: the 400s and 404s a request earns before anything is reserved, in-process.
// None of them may move money (Retry rules 5), checked after every test.

const t = fundedGateway({ guardEach: true, start: startAppGateway });

const JSON_ROUTES = ["/v1/messages", "/v1/messages/count_tokens", "/v1/chat/completions", "/v1/images/generations"];

describe("400 invalid_request", () => {
  it.each(JSON_ROUTES)("answers malformed JSON on %s", async (path) => {
    const err = await expectError(await postJson(t.gw, path, t.a.key, '{"model": "demo",'), 400, "invalid_request");
    expect(err.message).toContain("not valid JSON");
  });

  it.each(["[]", '"text"', "42", "null"])("answers the non-object JSON body %s", async (body) => {
    const err = await expectError(await postJson(t.gw, "/v1/messages", t.a.key, body), 400, "invalid_request");
    expect(err.message).toContain("JSON object");
  });

  it("answers an empty body", async () => {
    await expectError(await postJson(t.gw, "/v1/chat/completions", t.a.key, ""), 400, "invalid_request");
  });

  it.each([
    ["model", { messages: hi, max_tokens: 16 }],
    ["messages", { model: "demo", max_tokens: 16 }],
    ["max_tokens", { model: "demo", messages: hi }],
  ])("answers a Messages request without %s, naming the field", async (field, body) => {
    const err = await expectError(await postJson(t.gw, "/v1/messages", t.a.key, body), 400, "invalid_request");
    expect(err.message).toStartWith(`${field}: `);
  });

  it.each([
    ["model", { messages: hi, max_tokens: 16 }],
    ["messages", { model: "demo", max_tokens: 16 }],
  ])("answers a chat completion without %s, naming the field", async (field, body) => {
    const err = await expectError(await postJson(t.gw, "/v1/chat/completions", t.a.key, body), 400, "invalid_request");
    expect(err.message).toStartWith(`${field}: `);
  });

  it.each([
    ["/v1/chat/completions", "max_tokens", { model: "demo", messages: hi, max_tokens: "16" }, "Expected integer, or null"],
    ["/v1/responses", "max_output_tokens", { model: "demo", input: "Hello", max_output_tokens: 0 }, "Expected integer to be greater or equal to 1, or null"],
    ["/v1/images/generations", "n", { model: "demo-image-1", prompt: "a cat", n: 11 }, "Expected integer to be less or equal to 10, or null"],
  ])("says what a field that takes one of several types accepts, on %s's %s", async (path, field, body, expected) => {
    const err = await expectError(await postJson(t.gw, path, t.a.key, body), 400, "invalid_request");
    expect(err.message).toBe(`${field}: ${expected}`);
  });

  it("answers a chat completion with neither max_tokens nor max_completion_tokens", async () => {
    const err = await expectError(await postJson(t.gw, "/v1/chat/completions", t.a.key, { model: "demo", messages: hi }), 400, "invalid_request");
    expect(err.message).toContain("max_tokens");
    expect(err.message).toContain("max_completion_tokens");
  });
});

describe("400 invalid_request on what would let an answer outrun its reservation", () => {
  it.each([
    ["/v1/messages", "max_tokens", { model: "demo", messages: hi, max_tokens: 0 }],
    ["/v1/chat/completions", "max_tokens", { model: "demo", messages: hi, max_tokens: 0 }],
    ["/v1/chat/completions", "max_completion_tokens", { model: "demo", messages: hi, max_completion_tokens: 0, max_tokens: 1_000_000 }],
    ["/v1/responses", "max_output_tokens", { model: "demo", input: "Hello", max_output_tokens: 0 }],
  ])("answers an output cap of 0 on %s, naming %s", async (path, field, body) => {
    const err = await expectError(await postJson(t.gw, path, t.a.key, body), 400, "invalid_request");
    expect(err.message).toStartWith(`${field}: `);
  });

  it.each(["Model", "MODEL", "mOdEl"])("answers a top-level %s beside model, which a Go upstream would take for it", async (key) => {
    for (const path of ["/v1/messages", "/v1/chat/completions"]) {
      const err = await expectError(await postJson(t.gw, path, t.a.key, { model: "demo", [key]: "another-model", messages: hi, max_tokens: 16 }), 400, "invalid_request");
      expect(err.message).toStartWith(`${key}: `);
    }
  });

  it.each([["5"], [2], [0]])("answers a chat completion whose n is %p, not 1", async (n) => {
    const err = await expectError(await postJson(t.gw, "/v1/chat/completions", t.a.key, { model: "demo", messages: hi, max_tokens: 16, n }), 400, "invalid_request");
    expect(err.message).toStartWith("n: ");
  });
});

describe("a chat completion with both max_completion_tokens and max_tokens", () => {
  it("is reserved on the larger cap: 402 when only the smaller one fits the balance", async () => {
    // 10,000,000 output tokens at 4 USD per million is 40 USD against a balance of 5.
    const body = { model: "demo", messages: hi, max_completion_tokens: 16, max_tokens: 10_000_000 };
    await expectError(await postJson(t.gw, "/v1/chat/completions", t.a.key, body), 402, "insufficient_balance");
  });
});

describe("Elysia's own 422", () => {
  it.each([
    ["a JSON content-type with a malformed body", "application/json", "{oops"],
    ["a form-encoded body", "application/x-www-form-urlencoded", "model=demo&max_tokens=16"],
    ["a multipart body", "multipart/form-data; boundary=x", "--x\r\ncontent-disposition: form-data; name=model\r\n\r\ndemo\r\n--x--\r\n"],
    ["a plain-text body", "text/plain", "hello"],
  ])("never reaches a client: %s is 400 invalid_request", async (_, type, body) => {
    const res = await postJson(t.gw, "/v1/messages", t.a.key, body, { "content-type": type });
    expect(res.status).not.toBe(422);
    await expectError(res, 400, "invalid_request");
  });

  it("never reaches a client: a field of the wrong type is 400 invalid_request naming it", async () => {
    const res = await postJson(t.gw, "/v1/messages", t.a.key, { model: "demo", max_tokens: "ten", messages: hi });
    expect(res.status).not.toBe(422);
    const err = await expectError(res, 400, "invalid_request");
    expect(err.message).toStartWith("max_tokens: ");
  });
});

describe("400 model_protocol_mismatch", () => {
  it("answers an image model on /v1/messages", async () => {
    const res = await postJson(t.gw, "/v1/messages", t.a.key, { model: "demo-image", max_tokens: 16, messages: hi });
    const err = await expectError(res, 400, "model_protocol_mismatch");
    expect(err.message).toContain("demo-image-1");
  });

  it("answers an image model on /v1/chat/completions", async () => {
    const res = await postJson(t.gw, "/v1/chat/completions", t.a.key, { model: "demo-image-1", max_tokens: 16, messages: hi });
    await expectError(res, 400, "model_protocol_mismatch");
  });

  it("answers a text model on /v1/images/generations", async () => {
    const res = await postJson(t.gw, "/v1/images/generations", t.a.key, { model: "demo", prompt: "a cat" });
    const err = await expectError(res, 400, "model_protocol_mismatch");
    expect(err.message).toContain("demo-text-1");
  });

  it("answers a text model on /v1/images/edits", async () => {
    const form = new FormData();
    form.set("model", "demo-text-1");
    form.set("prompt", "a cat");
    form.append("image[]", new File([new Uint8Array(8)], "a.png", { type: "image/png" }));
    const res = await send(t.gw, "/v1/images/edits", { method: "POST", headers: { authorization: `Bearer ${t.a.key}` }, body: form });
    await expectError(res, 400, "model_protocol_mismatch");
  });
});

describe("404 model_not_found", () => {
  const unknown = "no-such-model-9";

  it("has the same message text on /v1/models/{id}, /v1/messages and /v1/chat/completions", async () => {
    const onModels = await expectError(await send(t.gw, `/v1/models/${unknown}`), 404, "model_not_found");
    const onMessages = await expectError(
      await postJson(t.gw, "/v1/messages", t.a.key, { model: unknown, max_tokens: 16, messages: hi }),
      404,
      "model_not_found",
    );
    const onChat = await expectError(
      await postJson(t.gw, "/v1/chat/completions", t.a.key, { model: unknown, max_tokens: 16, messages: hi }),
      404,
      "model_not_found",
    );
    expect(onModels.message).toContain(unknown);
    expect(onMessages.message).toBe(onModels.message);
    expect(onChat.message).toBe(onModels.message);
  });

  it("answers an unknown model on /v1/messages/count_tokens", async () => {
    await expectError(await postJson(t.gw, "/v1/messages/count_tokens", t.a.key, { model: unknown, messages: hi }), 404, "model_not_found");
  });

  it("answers an unknown model on /v1/images/generations", async () => {
    await expectError(await postJson(t.gw, "/v1/images/generations", t.a.key, { model: unknown, prompt: "a cat" }), 404, "model_not_found");
  });
});

describe("400 unsupported_content_type", () => {
  const png = { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" };

  it("names the position of an image block in a Messages request", async () => {
    const messages = [
      { role: "user", content: "hi" },
      { role: "user", content: [{ type: "image", source: png }] },
    ];
    const res = await postJson(t.gw, "/v1/messages", t.a.key, { model: "demo", max_tokens: 16, messages });
    const err = await expectError(res, 400, "unsupported_content_type");
    expect(err.message).toContain("messages[1].content[0]");
  });

  it("names the position of an image_url part in a chat completion", async () => {
    const messages = [
      { role: "system", content: "be brief" },
      { role: "user", content: [{ type: "text", text: "what is this?" }, { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }] },
    ];
    const res = await postJson(t.gw, "/v1/chat/completions", t.a.key, { model: "demo", max_tokens: 16, messages });
    const err = await expectError(res, 400, "unsupported_content_type");
    expect(err.message).toContain("messages[1].content[1]");
  });

  it("names the position of a PDF document block on count_tokens", async () => {
    const doc = { type: "document", source: { type: "base64", media_type: "application/pdf", data: "JVBERi0=" } };
    const res = await postJson(t.gw, "/v1/messages/count_tokens", t.a.key, { model: "demo", messages: [{ role: "user", content: [{ type: "text", text: "read" }, doc] }] });
    const err = await expectError(res, 400, "unsupported_content_type");
    expect(err.message).toContain("messages[0].content[1]");
  });
});

describe("a chat completion with only max_completion_tokens", () => {
  it("is served, and charged like one with max_tokens", async () => {
    const b = await t.gw.account(1);
    const res = await postJson(t.gw, "/v1/chat/completions", b.key, { model: "demo", max_completion_tokens: 16, messages: hi });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { usage: { cost_usd: number } };
    expect(t.gw.money(b.accountId).balance).toBe(1e9 - Math.round(body.usage.cost_usd * 1e9));
  });
});
