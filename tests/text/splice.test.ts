import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import type { Route } from "../../src/catalog/catalog.ts";
import { upstreamBody } from "../../src/relay/adapters.ts";
import { SMALL_BODY_BYTES, spliceModel } from "../../src/relay/splice.ts";
import { bodySize } from "../../src/ledger/estimate.ts";
import { priceAsks } from "../../src/relay/hold-size.ts";
import { postWithApiKey } from "../support/keyed.ts";
import { startTextRig, type TextRig } from "../support/text-rig.ts";
import { PRICES } from "../support/prices.ts";

// A native route sends the client's own bytes with only the model replaced, when the bytes can be
// trusted to say what the parsed body says; otherwise the parsed body, serialised again.

const enc = new TextEncoder();
const text = async (b: Blob | Uint8Array | string | null) =>
  b === null || typeof b === "string" ? b : b instanceof Uint8Array ? new TextDecoder().decode(b) : await b.text();
/** Splices `json` (the client's text) as the relay does: parsed, then replaced in the bytes. */
const splice = (json: string, model = "up-1", append?: string) => text(spliceModel(enc.encode(json), JSON.parse(json), model, append));

describe("spliceModel", () => {
  it("replaces the top-level model and leaves every other byte as the client sent it", async () => {
    expect(await splice('{"model":"gw","messages":[{"role":"user","content":"hi"}],"max_tokens":5}')).toBe(
      '{"model":"up-1","messages":[{"role":"user","content":"hi"}],"max_tokens":5}',
    );
  });

  it("sends the client's own bytes, not a copy, when the upstream's name is the one asked for", () => {
    for (const size of [100, SMALL_BODY_BYTES + 100]) {
      const json = JSON.stringify({ model: "up-1", max_tokens: 5, pad: "x".repeat(size) });
      const bytes = enc.encode(json);
      expect(spliceModel(bytes, JSON.parse(json), "up-1")).toBe(bytes);
      // Something to append, or a duplicate model key: never the bytes as they are.
      expect(spliceModel(bytes, JSON.parse(json), "up-1", ',"stream_options":{"include_usage":true}')).not.toBe(bytes);
      const twice = enc.encode(json.replace("}", ',"model":"up-1"}'));
      expect(spliceModel(twice, JSON.parse(json), "up-1")).toBeNull();
    }
  });

  it("keeps the client's whitespace around the model and elsewhere", async () => {
    expect(await splice('\n {\n  "model" :\t"gw" ,\n  "max_tokens": 5\n}\n')).toBe('\n {\n  "model" :\t"up-1" ,\n  "max_tokens": 5\n}\n');
  });

  it("writes an upstream model name that needs escaping as a JSON string", async () => {
    const out = await splice('{"model":"gw","max_tokens":5}', 'we"ird\\name');
    expect(JSON.parse(out!).model).toBe('we"ird\\name');
  });

  it("appends members before the closing brace", async () => {
    const out = await splice('{"model":"gw","stream":true} ', "up-1", ',"stream_options":{"include_usage":true}');
    expect(out).toBe('{"model":"up-1","stream":true,"stream_options":{"include_usage":true}} ');
  });

  it("declines when model is not the first key", async () => {
    expect(await splice('{"max_tokens":5,"model":"gw"}')).toBeNull();
  });

  it("declines a second model key, written plainly", async () => {
    expect(await splice('{"model":"gw","max_tokens":5,"model":"gw"}')).toBeNull();
  });

  it("declines a second model key spelled with an escape, whatever its value", async () => {
    expect(await splice('{"model":"other","max_tokens":5,"mod\\u0065l":"gw"}')).toBeNull();
    // The same value twice: only the escape's search can see the second key.
    expect(await splice('{"model":"gw","max_tokens":5,"mod\\u0065l":"gw"}')).toBeNull();
  });

  it("declines a model value written with escapes", async () => {
    expect(await splice('{"model":"g\\u0077","max_tokens":5}')).toBeNull();
    expect(await splice('{"model":"g\\"w","max_tokens":5}')).toBeNull();
  });

  it("declines a key named model anywhere inside the body (a tool's parameter), to be safe", async () => {
    expect(await splice('{"model":"gw","tools":[{"input_schema":{"properties":{"model" : {"type":"string"}}}}]}')).toBeNull();
  });

  it("accepts the word model inside a string", async () => {
    expect(await splice('{"model":"gw","messages":[{"role":"user","content":"which \\"model\\" are you?"}]}')).toBe(
      '{"model":"up-1","messages":[{"role":"user","content":"which \\"model\\" are you?"}]}',
    );
  });

  it("declines bytes that are not valid UTF-8 (the decoder repaired what was parsed)", () => {
    const bytes = new Uint8Array([...enc.encode('{"model":"gw","x":"'), 0xff, ...enc.encode('"}')]);
    expect(spliceModel(bytes, { model: "gw", x: "\ufffd" }, "up-1")).toBeNull();
  });

  it("declines a body that starts with a byte-order mark", () => {
    const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...enc.encode('{"model":"gw"}')]);
    expect(spliceModel(bytes, { model: "gw" }, "up-1")).toBeNull();
  });

  // A large body's answers to "ASCII?" and "any \\u?" are kept from the estimator's and the hold's
  // scans (wire/body-scan.ts): the splice must still decline what it declined scanning for itself.
  const large = (inner: string) => `{"model":"gw","pad":"${"x".repeat(20_000)}",${inner}}`;

  it("declines a large body's escaped second model key after the estimator and the hold have read its bytes", () => {
    const json = large('"mod\\u0065l":"gw"');
    const bytes = enc.encode(json);
    const parsed = JSON.parse(json);
    bodySize(bytes);
    priceAsks(parsed, bytes);
    expect(spliceModel(bytes, parsed, "up-1")).toBeNull();
  });

  it("declines a large body that is not valid UTF-8 after the estimator has read its bytes", () => {
    const bytes = new Uint8Array([...enc.encode(`{"model":"gw","pad":"${"x".repeat(20_000)}","x":"`), 0xff, ...enc.encode('"}')]);
    bodySize(bytes);
    expect(spliceModel(bytes, { model: "gw", pad: "x".repeat(20_000), x: "\ufffd" }, "up-1")).toBeNull();
  });

  it("declines when the parsed model is not the one in the bytes", async () => {
    expect(await text(spliceModel(enc.encode('{"model":"gw"}'), { model: "other" }, "up-1"))).toBeNull();
  });

  it("matches a model name with non-ASCII characters by its UTF-8 bytes", async () => {
    expect(await splice('{"model":"gw-é","max_tokens":5}')).toBe('{"model":"up-1","max_tokens":5}');
    // The same two bytes read one by one as Latin-1 characters are another name.
    expect(spliceModel(enc.encode('{"model":"é"}'), { model: "\u00c3\u00a9" }, "up-1")).toBeNull();
  });

  it("sends one buffer for a small body and a Blob for a large one, the same bytes either way", async () => {
    // 100: copied out of the client's array; 4000: a view on it, sent as one buffer; past SMALL_BODY_BYTES: a Blob.
    for (const size of [100, 4000, SMALL_BODY_BYTES + 1000]) {
      const json = JSON.stringify({ model: "gw", stream: true, messages: [{ role: "user", content: "é".repeat(size / 2) }] });
      const spliced = spliceModel(enc.encode(json), JSON.parse(json), "up-ü", ',"stream_options":{"include_usage":true}');
      expect(spliced instanceof Blob).toBe(size > SMALL_BODY_BYTES);
      expect(await text(spliced)).toBe(JSON.stringify({ ...JSON.parse(json), model: "up-ü", stream_options: { include_usage: true } }));
    }
  });
});

const route = (max_tokens_field?: "max_tokens" | "max_completion_tokens") =>
  ({ key: "p/up-1", upstreamModel: "up-1", provider: { id: "p", kind: "openai", max_tokens_field }, capabilities: {} }) as unknown as Route;
/** upstreamBody on a client's text, as the relay calls it; bytes as text. */
const native = async (dialect: "chat" | "messages", json: string, r = route()) => {
  const out = upstreamBody(dialect, dialect, JSON.parse(json), r, enc.encode(json));
  return { body: out.body, bytes: await text(out.bytes ?? null) };
};

describe("upstreamBody on a native route", () => {
  it("sends a Messages body as the client's bytes with the upstream model", async () => {
    const out = await native("messages", '{"model":"gw","max_tokens":5,"messages":[]}');
    expect(out.bytes).toBe('{"model":"up-1","max_tokens":5,"messages":[]}');
  });

  it("asks for usage on a chat stream by appending stream_options to the client's bytes", async () => {
    const out = await native("chat", '{"model":"gw","stream":true,"messages":[]}');
    expect(JSON.parse(out.bytes!)).toEqual(out.body);
    expect(out.body.stream_options).toEqual({ include_usage: true });
  });

  it("sends the client's bytes when their stream_options already ask for usage", async () => {
    const json = '{"model":"gw","stream":true,"stream_options":{"include_usage":true},"messages":[]}';
    expect((await native("chat", json)).bytes).toBe(json.replace('"gw"', '"up-1"'));
  });

  it("serialises the body again when the client's stream_options must change", async () => {
    const out = await native("chat", '{"model":"gw","stream":true,"stream_options":{"include_usage":false},"messages":[]}');
    expect(out.bytes).toBeNull();
    expect(out.body.stream_options).toEqual({ include_usage: true });
  });

  it("serialises the body again when the cap must be renamed for the route", async () => {
    expect((await native("chat", '{"model":"gw","max_completion_tokens":5,"messages":[]}', route("max_tokens"))).bytes).toBeNull();
    expect((await native("chat", '{"model":"gw","max_tokens":5,"messages":[]}', route("max_tokens"))).bytes).toBe('{"model":"up-1","max_tokens":5,"messages":[]}');
  });

  it("serialises the body when the splice declines", async () => {
    const out = await native("messages", '{"max_tokens":5,"model":"gw","messages":[]}');
    expect(out.bytes).toBeNull();
    expect(out.body.model).toBe("up-1");
  });
});

describe("what the upstream receives", () => {
  let rig: TextRig;
  beforeAll(async () => {
    // A catalog id that is its upstream's own model name: the body is sent as the client's bytes.
    rig = await startTextRig([{ id: "same-name", modalities: ["text"], endpoints: ["messages"], pricing: PRICES, routes: [{ provider: "anthropic", model: "same-name" }] }]);
  });
  afterAll(() => rig.stop());
  const post = (path: string, body: string) => postWithApiKey(rig.gw, path, body, rig.acct.key);

  it("is the client's own bytes, small or large, when the upstream's name is the one asked for", async () => {
    for (const pad of ["", "x".repeat(20_000)]) {
      const body = `{ "model": "same-name", "max_tokens": 10, "messages": [{"role": "user", "content": "hi ${pad}"}] }`;
      expect((await post("/v1/messages", body)).status).toBe(200);
      const up = rig.up.requests.at(-1)!;
      expect(up.rawBody).toBe(body);
      expect(up.headers["content-length"]).toBe(String(Buffer.byteLength(body)));
    }
  });

  it("is the client's pretty-printed body, byte for byte, with the upstream model", async () => {
    const body = JSON.stringify({ model: "claude-native", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }, null, 2);
    expect((await post("/v1/messages", body)).status).toBe(200);
    expect(rig.up.requests.at(-1)!.rawBody).toBe(body.replace('"claude-native"', '"claude-upstream-1"'));
  });

  it("is sent as application/json with its length when spliced", async () => {
    const body = JSON.stringify({ model: "claude-native", max_tokens: 10, messages: [{ role: "user", content: "hi" }] });
    expect((await post("/v1/messages", body)).status).toBe(200);
    const up = rig.up.requests.at(-1)!;
    expect(up.headers["content-type"]).toBe("application/json");
    expect(up.headers["content-length"]).toBe(String(Buffer.byteLength(up.rawBody)));
  });

  it("is the translation's JSON, sent as application/json with its UTF-8 length, on a Chat upstream", async () => {
    const body = JSON.stringify({ model: "gpt-native", max_tokens: 10, system: "sé ✓ 😀", messages: [{ role: "user", content: "naïve \u2028 日本" }] });
    expect((await post("/v1/messages", body)).status).toBe(200);
    const up = rig.up.requests.at(-1)!;
    expect(up.headers["content-type"]).toBe("application/json");
    expect(up.headers["content-length"]).toBe(String(Buffer.byteLength(up.rawBody)));
    expect(JSON.parse(up.rawBody)).toEqual({
      model: "gpt-upstream-1",
      messages: [{ role: "system", content: "sé ✓ 😀" }, { role: "user", content: "naïve \u2028 日本" }],
      max_tokens: 10,
    });
  });

  it("is the parsed body serialised again when the model key comes twice", async () => {
    const body = '{"model":"claude-native","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"model":"claude-native"}';
    expect((await post("/v1/messages", body)).status).toBe(200);
    const up = rig.up.requests.at(-1)!;
    expect(up.rawBody).toBe('{"model":"claude-upstream-1","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}');
  });
});
