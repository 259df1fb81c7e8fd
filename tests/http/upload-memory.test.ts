import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { readFileSync } from "node:fs";
import { serve, tempInstallation, type ServeProcess } from "../support/cli.ts";
import { hi, keyHeaders } from "../support/http.ts";
import { expectError } from "../support/errors.ts";
import { rawUpload } from "../support/raw-http.ts";

// Spec, Limits: 20 MiB per request. A 200 MiB streamed upload must be refused while it is still
// coming in, and must not be buffered: the server runs in its own process so its RSS is its own.

const MiB = 1024 * 1024;
const UPLOAD = 200 * MiB;

const install = tempInstallation();
let server: ServeProcess;
let url: string;
let key: string;
beforeAll(async () => {
  // Port 0: the OS picks a free one, and --json reports it. The first start prints the demo key.
  server = await serve(["--config", install.config, "--port", "0", "--db", install.db, "--json"]);
  const info = JSON.parse(server.firstLine) as { port: number; first_key: string };
  url = `http://127.0.0.1:${info.port}`;
  key = info.first_key;
});
afterAll(async () => {
  await server.stop();
  install.remove();
});

const rssBytes = (pid: number) => Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) * 1024;

describe("a 200 MiB streamed upload to /v1/messages with a valid key", () => {
  it("is refused with 413 long before it is all sent, while the server's memory stays flat", async () => {
    // Warm the server up (JIT, SQLite pages, one real request) so the baseline is the steady state.
    const warm = await fetch(`${url}/v1/messages`, { method: "POST", headers: keyHeaders(key), body: JSON.stringify({ model: "demo", max_tokens: 8, messages: hi }) });
    expect(warm.status).toBe(200);
    await warm.arrayBuffer();
    const before = rssBytes(server.pid);

    let sent = 0;
    const chunk = new Uint8Array(MiB).fill(0x20);
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent >= UPLOAD) return c.close();
        sent += chunk.byteLength;
        c.enqueue(chunk);
      },
    });
    const res = await fetch(`${url}/v1/messages`, { method: "POST", headers: keyHeaders(key), body, duplex: "half" } as RequestInit);
    const sentWhenAnswered = sent;
    await expectError(res, 413, "request_too_large");

    expect(sentWhenAnswered).toBeLessThan(UPLOAD / 2);
    const growth = rssBytes(server.pid) - before;
    expect(growth).toBeLessThan(80 * MiB);
  });
});

describe("20 uploads without a key, each declaring 20 MB and stalling", () => {
  it("are all answered 401 and closed, while the server's memory stays flat", async () => {
    const before = rssBytes(server.pid);
    const port = Number(new URL(url).port);
    // Each sends what the socket takes of its 20 MB, then stalls with the connection open.
    const outs = await Promise.all(
      Array.from({ length: 20 }, () =>
        rawUpload(port, { method: "POST", target: "/v1/messages", headers: [["content-type", "application/json"]] }, { totalBytes: 20_000_000, waitMs: 6_000 }),
      ),
    );
    const growth = rssBytes(server.pid) - before;
    for (const out of outs) {
      expect(out.head).toStartWith("HTTP/1.1 401 ");
      expect(out.closed).toBe(true);
    }
    expect(growth).toBeLessThan(40 * MiB);
  });
});
