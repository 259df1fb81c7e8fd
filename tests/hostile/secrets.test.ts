import { afterAll, beforeAll, beforeEach, describe, expect, it } from "bun:test";
import { buildRedactor, REDACTED, secretsOf } from "../../src/wire/scrub.ts";
import { anthropicOpening, sseHeaders } from "../support/raw-upstream.ts";
import { sse } from "../support/sse.ts";
import { ask, HEADER_SECRET, SECRET_A, SECRET_O, startHostileRig, type HostileRig } from "./rig.ts";
import { errorOf } from "../support/errors.ts";

// Issue 14 item 7: a provider's credential reached clients whenever an upstream error message
// quoted it. Every configured secret (api_key, secret-looking headers) and every masked echo of
// one is replaced by "[redacted]" in what is passed through.

let rig: HostileRig;
beforeAll(async () => {
  rig = await startHostileRig();
});
beforeEach(() => rig.reset());
afterAll(() => rig.stop());

const leaks = (text: string) => [SECRET_A, SECRET_O, HEADER_SECRET, SECRET_A.slice(-6), SECRET_O.slice(-6)].filter((s) => text.includes(s));

describe("a vendor error passed through", () => {
  it("never shows the provider's api_key it quotes", async () => {
    rig.raw.handle = () =>
      Response.json({ type: "error", error: { type: "authentication_error", message: `invalid x-api-key: ${SECRET_A}` } }, { status: 401 });
    const res = await rig.post("/v1/messages", ask("raw"));
    expect(res.status).toBe(401);
    expect((await errorOf(res)).message).toBe(`invalid x-api-key: ${REDACTED}`);
  });

  it("never shows a masked echo of it (OpenAI's 401 quotes the key's first and last characters)", async () => {
    const masked = `${SECRET_O.slice(0, 12)}${"*".repeat(24)}${SECRET_O.slice(-4)}`;
    rig.raw.handle = () =>
      Response.json(
        { error: { message: `Incorrect API key provided: ${masked}. You can find your API key at https://platform.openai.com/account/api-keys.`, type: "invalid_request_error", code: "invalid_api_key" } },
        { status: 401 },
      );
    const message = (await errorOf(await rig.post("/v1/chat/completions", ask("raw-openai")))).message;
    expect(message).toBe(`Incorrect API key provided: ${REDACTED}. You can find your API key at https://platform.openai.com/account/api-keys.`);
  });

  it("never shows a secret header value of the provider's config", async () => {
    rig.raw.handle = () =>
      Response.json({ type: "error", error: { type: "invalid_request_error", message: `bad header x-extra-token=${HEADER_SECRET}` } }, { status: 400 });
    const message = (await errorOf(await rig.post("/v1/messages", ask("raw")))).message;
    expect(leaks(message)).toEqual([]);
    expect(message).toContain(REDACTED);
  });

  it("never shows it on a 529 overloaded either", async () => {
    rig.raw.handle = () => Response.json({ type: "error", error: { type: "overloaded_error", message: `Overloaded (key ${SECRET_A})` } }, { status: 529, headers: { "retry-after": "0" } });
    const res = await rig.post("/v1/messages", ask("raw"));
    expect(res.status).toBe(529);
    expect(leaks(await res.text())).toEqual([]);
  });
});

const anthropicError = sse("error", { type: "error", error: { type: "api_error", message: `upstream rejected ${SECRET_A}` } });
const openaiOpening = sse(undefined, { id: "c1", object: "chat.completion.chunk", created: 1, model: "up", choices: [{ index: 0, delta: { role: "assistant", content: "Hel" }, finish_reason: null }] });
const openaiError = sse(undefined, { error: { message: `upstream rejected ${SECRET_O}`, type: "server_error", code: null } });

describe("a mid-stream error event relayed", () => {
  const cases: [string, string, Record<string, unknown>, string[]][] = [
    ["Messages upstream → Messages client", "/v1/messages", ask("raw", { stream: true }), [...anthropicOpening(), anthropicError]],
    ["Messages upstream → Chat client", "/v1/chat/completions", ask("raw", { stream: true }), [...anthropicOpening(), anthropicError]],
    ["Messages upstream → Responses client", "/v1/responses", { model: "raw", input: "hi", max_output_tokens: 20, stream: true }, [...anthropicOpening(), anthropicError]],
    ["Chat upstream → Chat client", "/v1/chat/completions", ask("raw-openai", { stream: true }), [openaiOpening, openaiError]],
    ["Chat upstream → Messages client", "/v1/messages", ask("raw-openai", { stream: true }), [openaiOpening, openaiError]],
    ["Chat upstream → Responses client", "/v1/responses", { model: "raw-openai", input: "hi", max_output_tokens: 20, stream: true }, [openaiOpening, openaiError]],
    ["Chat upstream, error as an `event: error` → Chat client", "/v1/chat/completions", ask("raw-openai", { stream: true }), [openaiOpening, `event: error\n${openaiError}`]],
  ];
  for (const [name, path, body, frames] of cases) {
    it(`${name}: the error reaches the client, the key does not`, async () => {
      rig.raw.handle = () => new Response(frames.join(""), { headers: sseHeaders });
      const res = await rig.post(path, body);
      const text = await res.text();
      expect(text).toContain("Hel");
      expect(text).toContain("upstream rejected");
      expect(leaks(text)).toEqual([]);
      expect(text).toContain(REDACTED);
    });
  }
});

describe("the redactor", () => {
  const redact = buildRedactor(["sk-live-abcdefghijklmnop", "short-but-ok1"]);

  it("returns the very same string when no secret occurs (no copy on the common path)", () => {
    const text = "Overloaded. Please retry in a few seconds.";
    expect(redact(text)).toBe(text);
  });

  it("replaces every occurrence, the longest secret first", () => {
    expect(redact("a sk-live-abcdefghijklmnop b sk-live-abcdefghijklmnop")).toBe(`a ${REDACTED} b ${REDACTED}`);
  });

  it("replaces masked echoes with stars or dots, keeping unrelated masks", () => {
    expect(redact("key sk-live-ab****mnop used")).toBe(`key ${REDACTED} used`);
    expect(redact("key sk-l...mnop used")).toBe(`key ${REDACTED} used`);
    expect(redact("password ****** and wait...")).toBe("password ****** and wait...");
  });

  it("collects api_key and the secret-looking headers, with and without their scheme", () => {
    const secrets = secretsOf([
      { api_key: "sk-aaaaaaaaaaaa", headers: { Authorization: "Bearer tok-bbbbbbbbbb", "HTTP-Referer": "https://example.com/app", "x-api-key": "cccccccccccc" } },
      { api_key: "ollama" },
    ]);
    expect(secrets.sort()).toEqual(["Bearer tok-bbbbbbbbbb", "cccccccccccc", "sk-aaaaaaaaaaaa", "tok-bbbbbbbbbb"]);
  });
});
