import { afterAll, beforeAll, beforeEach, describe, expect, it } from "bun:test";
import OpenAI, { toFile } from "openai";
import { expectError } from "../support/errors.ts";
import { startGatewayOnMock, type TestGateway } from "../support/gateway.ts";
import { send } from "../support/http.ts";
import { postWithApiKey } from "../support/keyed.ts";
import { encodePng, type MockFile, type MockUpstream } from "../support/mock-upstream.ts";

// POST /v1/images/edits reads a multipart form: each field once (the sources aside, counted
// together whatever their spelling), enumerated fields within their values, and an
// Idempotency-Key fingerprinted on the parsed parts, not on the raw body and its random boundary.

const PER_IMAGE_NANO = 40_000_000;
let up: MockUpstream;
let gw: TestGateway;
let stop: () => Promise<void>;

beforeAll(async () => {
  ({ up, gw, stop } = await startGatewayOnMock({
    openai: true,
    limits: { default_rpm: 10_000 },
    models: [{ id: "img", modalities: ["image"], endpoints: ["images.generations", "images.edits"], pricing: { per_image: 0.04 }, routes: [{ provider: "openai", model: "gpt-image-1" }] }],
  }));
});
afterAll(() => stop());
beforeEach(() => up.reset());

const png = () => new File([encodePng(8, 8)], "a.png", { type: "image/png" });

/** A valid edit form; `extra` appends more parts (a field sent again, more sources). */
function editForm(extra: [string, string | File][] = []): FormData {
  const form = new FormData();
  form.append("model", "img");
  form.append("prompt", "a hat on the cat");
  form.append("image", png());
  for (const [k, v] of extra) form.append(k, v);
  return form;
}

const edit = (key: string, form: FormData, headers: Record<string, string> = {}) =>
  send(gw, "/v1/images/edits", { method: "POST", headers: { authorization: `Bearer ${key}`, ...headers }, body: form });
const upstreamEdits = () => up.hits["POST /v1/images/edits"] ?? 0;

describe("POST /v1/images/edits form fields", () => {
  it("refuses n sent twice with 400 invalid_request naming n, sending nothing upstream", async () => {
    const a = await gw.account(5);
    const err = await expectError(await edit(a.key, editForm([["n", "1"], ["n", "10"]])), 400, "invalid_request");
    expect(err.message).toStartWith("n:");
    expect(upstreamEdits()).toBe(0);
    expect(gw.money(a.accountId)).toMatchObject({ balance: 5_000_000_000, openHolds: 0 });
  });

  it("counts image and image[0]…image[4] together and refuses five sources", async () => {
    const a = await gw.account(5);
    const more: [string, File][] = [0, 1, 2, 3].map((i) => [`image[${i}]`, png()]);
    const err = await expectError(await edit(a.key, editForm(more)), 400, "invalid_request");
    expect(err.message).toContain("got 5");
    expect(upstreamEdits()).toBe(0);
  });

  it("refuses background \"true\" with 400 invalid_request naming background", async () => {
    const a = await gw.account(5);
    const err = await expectError(await edit(a.key, editForm([["background", "true"]])), 400, "invalid_request");
    expect(err.message).toStartWith("background:");
    expect(upstreamEdits()).toBe(0);
  });

  it("serves background transparent, forwarded as sent", async () => {
    const a = await gw.account(5);
    const res = await edit(a.key, editForm([["background", "transparent"]]));
    expect(res.status).toBe(200);
    expect(up.requests.at(-1)!.body).toMatchObject({ background: "transparent", model: "gpt-image-1" });
  });

  it("replays a retry of the same form with the same Idempotency-Key, though its boundary differs", async () => {
    const a = await gw.account(5);
    const form = editForm([["n", "2"]]);
    const first = await edit(a.key, form, { "idempotency-key": "edit-1" });
    const again = await edit(a.key, form, { "idempotency-key": "edit-1" });
    expect([first.status, again.status, again.headers.get("idempotent-replayed")]).toEqual([200, 200, "true"]);
    expect(await again.text()).toBe(await first.text());
    expect(upstreamEdits()).toBe(1);
    expect(gw.money(a.accountId).balance).toBe(5_000_000_000 - 2 * PER_IMAGE_NANO);
  });

  it("still refuses the same Idempotency-Key with another source image with 409 idempotency_conflict", async () => {
    const a = await gw.account(5);
    await (await edit(a.key, editForm(), { "idempotency-key": "edit-2" })).arrayBuffer();
    const other = new FormData();
    other.append("model", "img");
    other.append("prompt", "a hat on the cat");
    other.append("image", new File([encodePng(8, 8, [1, 2, 3])], "a.png", { type: "image/png" }));
    await expectError(await edit(a.key, other, { "idempotency-key": "edit-2" }), 409, "idempotency_conflict");
  });
});

describe("POST /v1/images/edits source files", () => {
  const JPEG = Uint8Array.from([0xff, 0xd8, 0xff, 0xe0, 0, 16, 0x4a, 0x46, 0x49, 0x46, 0, 1]);

  it("types sources and a mask the SDK sends as application/octet-stream from their bytes", async () => {
    const a = await gw.account(5);
    const sdk = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: a.key, maxRetries: 0 });
    const image = [await toFile(encodePng(8, 8)), await toFile(JPEG, "b.bin")];
    const res = await sdk.images.edit({ model: "img", prompt: "a hat", image, mask: await toFile(encodePng(8, 8)) });
    expect(res.data).toHaveLength(1);
    const body = up.requests.at(-1)!.body as Record<string, MockFile | MockFile[]>;
    const files = [...(body["image[]"] as MockFile[]), body.mask as MockFile];
    expect(files.map((f) => [f.type, f.filename.split(".").at(-1)])).toEqual([["image/png", "png"], ["image/jpeg", "jpg"], ["image/png", "png"]]);
  });

  it("refuses a source that is no image with 400 invalid_request naming it, holding and sending nothing", async () => {
    const a = await gw.account(5);
    const text = new File(["not an image"], "notes.png", { type: "image/png" });
    const err = await expectError(await edit(a.key, editForm([["image", text]])), 400, "invalid_request");
    expect(err.message).toStartWith("image[1]:");
    expect(upstreamEdits()).toBe(0);
    expect(gw.money(a.accountId)).toMatchObject({ balance: 5_000_000_000, openHolds: 0 });
  });

  it("refuses a mask that is no PNG with 400 invalid_request naming mask", async () => {
    const a = await gw.account(5);
    const mask = new File([JPEG], "mask.png", { type: "image/png" });
    const err = await expectError(await edit(a.key, editForm([["mask", mask]])), 400, "invalid_request");
    expect(err.message).toStartWith("mask:");
    expect(upstreamEdits()).toBe(0);
  });
});

describe("POST /v1/images/generations enumerated fields", () => {
  it("refuses background \"true\" with 400 invalid_request naming background", async () => {
    const a = await gw.account(5);
    const res = await postWithApiKey(gw, "/v1/images/generations", { model: "img", prompt: "a cat", background: "true" }, a.key);
    expect((await expectError(res, 400, "invalid_request")).message).toStartWith("background:");
    expect(up.hits["POST /v1/images/generations"] ?? 0).toBe(0);
  });
});
