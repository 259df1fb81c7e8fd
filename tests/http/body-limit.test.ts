import { describe, expect, it } from "bun:test";
import { fundedGateway, keyHeaders } from "../support/http.ts";
import { expectError } from "../support/errors.ts";

// Spec, Limits: a body over 20 MiB is 413 request_too_large, whether its size is declared or it
// arrives chunked. The memory side of the limit is in upload-memory.test.ts.

const MiB = 1024 * 1024;
const LIMIT = 20 * MiB;

const t = fundedGateway({ guardEach: true });

/** `size` bytes of JSON whitespace, in 1 MiB chunks, with no content-length (chunked upload). */
function chunked(size: number): ReadableStream<Uint8Array> {
  let left = size;
  return new ReadableStream({
    pull(c) {
      if (left <= 0) return c.close();
      const n = Math.min(MiB, left);
      left -= n;
      c.enqueue(new Uint8Array(n).fill(0x20));
    },
  });
}

const post = (path: string, body: Uint8Array | ReadableStream<Uint8Array> | string, headers: Record<string, string> = keyHeaders(t.a.key)) =>
  fetch(`${t.gw.url}${path}`, { method: "POST", headers, body, duplex: "half" } as RequestInit);

describe("413 request_too_large", () => {
  it("answers a body with a declared content-length over 20 MiB", async () => {
    const res = await post("/v1/messages", new Uint8Array(LIMIT + 1).fill(0x20));
    const err = await expectError(res, 413, "request_too_large");
    expect(err.message).toBe("Request body is larger than this route's 20 MiB limit.");
  });

  it("answers a chunked body that grows past 20 MiB", async () => {
    await expectError(await post("/v1/chat/completions", chunked(LIMIT + 1)), 413, "request_too_large");
  });

  it("answers an oversized multipart upload to /v1/images/edits", async () => {
    const form = new FormData();
    form.set("model", "demo-image");
    form.set("prompt", "p");
    form.append("image[]", new File([new Uint8Array(LIMIT)], "big.png", { type: "image/png" }));
    const res = await fetch(`${t.gw.url}/v1/images/edits`, { method: "POST", headers: { authorization: `Bearer ${t.a.key}` }, body: form });
    await expectError(res, 413, "request_too_large");
  });

  it("is answered before the key is checked", async () => {
    await expectError(await post("/v1/messages", new Uint8Array(LIMIT + 1), { "content-type": "application/json" }), 413, "request_too_large");
  });
});

describe("a body of exactly 20 MiB", () => {
  it("is read and judged on its JSON when its length is declared", async () => {
    const err = await expectError(await post("/v1/messages", new Uint8Array(LIMIT).fill(0x20)), 400, "invalid_request");
    expect(err.message).toContain("JSON");
  });

  it("is read and judged on its JSON when it arrives chunked", async () => {
    await expectError(await post("/v1/messages", chunked(LIMIT)), 400, "invalid_request");
  });
});
