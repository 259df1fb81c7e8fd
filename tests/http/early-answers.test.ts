import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { rawUpload } from "../support/raw-http.ts";

// An answer given while the request's body is still coming (refused on its headers, or cut off at
// the size limit) closes the connection: kept open, the server read and threw away the rest of the
// upload, and the client went on sending a body nobody would read.

const MiB = 1024 * 1024;

let gw: TestGateway;
let port: number;
beforeAll(async () => {
  gw = await startTestGateway();
  port = Number(new URL(gw.url).port);
});
afterAll(() => gw.stop());

const json: [string, string] = ["content-type", "application/json"];

describe("an upload answered before its end", () => {
  it("over 20 MiB, chunked, is answered 413 with connection: close and the socket ended", async () => {
    const a = await gw.account(1);
    const out = await rawUpload(port, { method: "POST", target: "/v1/messages", headers: [json, ["x-api-key", a.key]] }, { totalBytes: 64 * MiB, chunked: true, waitMs: 8_000 });
    expect(out.head).toStartWith("HTTP/1.1 413 ");
    expect(out.head.toLowerCase()).toContain("connection: close");
    expect(out.closed).toBe(true);
    expect(out.sent).toBeLessThan(48 * MiB);
  });

  it("without a key, declaring 20 MiB, is answered 401 with connection: close and the socket ended", async () => {
    const out = await rawUpload(port, { method: "POST", target: "/v1/messages", headers: [json] }, { totalBytes: 20 * MiB, waitMs: 5_000 });
    expect(out.head).toStartWith("HTTP/1.1 401 ");
    expect(out.head.toLowerCase()).toContain("connection: close");
    expect(out.closed).toBe(true);
    expect(out.sent).toBeLessThan(20 * MiB);
  });

  it("to a dashboard route without a session, chunked, is answered 401 before its body is read", async () => {
    const out = await rawUpload(
      port,
      { method: "POST", target: "/api/keys", headers: [json, ["origin", `http://127.0.0.1:${port}`]] },
      { totalBytes: 16 * 1024, chunked: true, waitMs: 3_000 },
    );
    // 16 KiB and then silence: only an answer that did not wait for the body's end comes at all.
    expect(out.head).toStartWith("HTTP/1.1 401 ");
    expect(out.closed).toBe(true);
  });
});
