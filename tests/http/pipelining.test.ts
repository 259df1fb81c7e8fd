import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { startGatewayOnMock, type TestGateway } from "../support/gateway.ts";
import type { MockUpstream } from "../support/mock-upstream.ts";
import { ledgerRows } from "../support/keyed.ts";
import { rawRequest } from "../support/raw-http.ts";

// HTTP/1.1 pipelining: two requests written back to back on one socket before the first answer.
// Bun 1.4's server (uWebSockets) closes such a connection, unanswered, the moment it reads the
// second request's head while the first's answer is still being made (any answer that awaits
// anything; upstream: oven-sh/bun pull requests 32868, 35036, 38128, not in 1.4). The gateway
// cannot answer them; what it guarantees is that the closed pair costs nothing and changes
// nothing, and that the client's retry on a new connection is served
// (docs/operations.md#what-clients-are-held-to).

let gw: TestGateway;
let up: MockUpstream;
let stop: () => Promise<void>;
let port: number;
beforeAll(async () => {
  ({ gw, up, stop } = await startGatewayOnMock({
    models: [{ id: "m", modalities: ["text"], endpoints: ["messages"], pricing: { input: 3, output: 15 }, routes: [{ provider: "anthropic", model: "m-up" }] }],
  }));
  // An upstream that takes a moment, as every real one does.
  up.setDefault({ kind: "slow_stream", events: 2, intervalMs: 100 });
  port = Number(new URL(gw.url).port);
});
afterAll(() => stop());

const body = JSON.stringify({ model: "m", max_tokens: 8, messages: [{ role: "user", content: "hi" }] });
const post = (key: string) =>
  `POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${key}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`;

/** Writes `raw` in one go and reads until the server closes (or `waitMs`); what came back. */
async function pipelined(raw: string, waitMs = 3_000): Promise<{ text: string; closed: boolean }> {
  let text = "";
  const { promise, resolve } = Promise.withResolvers<boolean>();
  const socket = await Bun.connect({
    hostname: "127.0.0.1",
    port,
    socket: {
      data(_s, d) {
        text += Buffer.from(d).toString("latin1");
      },
      close: () => resolve(true),
      error: () => resolve(true),
    },
  });
  socket.write(raw);
  const closed = await Promise.race([promise, Bun.sleep(waitMs).then(() => false)]);
  socket.end();
  return { text, closed };
}

describe("two POSTs pipelined on one connection", () => {
  it("are answered in order, or the connection is closed with nothing charged, and a retry on a new connection is served", async () => {
    const a = await gw.account(1);
    const out = await pipelined(post(a.key) + post(a.key));
    const statuses = [...out.text.matchAll(/^HTTP\/1\.1 (\d{3})/gm)].map((m) => Number(m[1]));
    // Let a request the close left running settle its hold before the books are read.
    await Bun.sleep(500);
    const charges = ledgerRows(gw, a.accountId).filter((r) => r.kind === "charge").length;
    if (statuses.length === 2) {
      expect(statuses).toEqual([200, 200]);
      expect(charges).toBe(2);
    } else {
      // Bun 1.4: closed unanswered. Each request the client got no answer to is free.
      expect(out.closed).toBe(true);
      expect(charges).toBe(statuses.length);
      expect(gw.money(a.accountId).reserved).toBe(0);
    }
    const retry = await rawRequest(port, { method: "POST", target: "/v1/messages", headers: [["x-api-key", a.key], ["content-type", "application/json"]], body: new TextEncoder().encode(body) });
    expect(retry.status).toBe(200);
  });
});
