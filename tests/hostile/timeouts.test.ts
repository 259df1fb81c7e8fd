import { afterAll, beforeAll, beforeEach, describe, expect, it } from "bun:test";
import { createServer, type AddressInfo, type Socket } from "node:net";
import { anthropicProvider } from "../../src/upstreams/http-providers.ts";
import { anthropicOpening, sseHeaders, stalledBody } from "../support/raw-upstream.ts";
import { sse } from "../support/sse.ts";
import { ask, IDLE_MS, startHostileRig, TOTAL_MS, type HostileRig } from "./rig.ts";
import { errorOf } from "../support/errors.ts";

// Issue 14 item 4: an upstream that sends its headers and then nothing (or trickles forever) used
// to hold the client's reservation for as long as it liked. Each provider now has an idle and a
// total timeout (here 300 ms and 2 s) covering body reads and streams.

let rig: HostileRig;
beforeAll(async () => {
  rig = await startHostileRig();
});
beforeEach(() => rig.reset());
afterAll(() => rig.stop());

const balance = () => rig.gw.money(rig.acct.accountId).balance;
const json = { "content-type": "application/json" };

describe("a non-streamed answer that stalls after its headers", () => {
  it("answers 502 upstream_unavailable after the idle timeout, charges nothing and closes the upstream", async () => {
    const before = balance();
    rig.raw.handle = (_req, rec) => new Response(stalledBody(rec, ['{"id":"msg_1","type":"mess']), { headers: json });
    const started = performance.now();
    const res = await rig.post("/v1/messages", ask("raw"));
    expect(res.status).toBe(502);
    expect((await errorOf(res)).code).toBe("upstream_unavailable");
    expect(performance.now() - started).toBeLessThan(IDLE_MS + 1_500);
    await rig.expectUncharged(before);
    await rig.raw.requests[0]!.gone;
    expect(rig.eventsOf(res)[0]).toMatchObject({ event: "upstream_failed", route: "raw-a/raw-up", reason: `timeout: no byte from the upstream for ${IDLE_MS} ms` });
  });

  it("falls back to the next route, which serves it", async () => {
    // One byte of JSON whitespace: Bun sends the headers with the first byte of the body.
    rig.raw.handle = (_req, rec) => new Response(stalledBody(rec, [" "]), { headers: json });
    rig.mock.script({ kind: "text", text: "from the mock" });
    const res = await rig.post("/v1/messages", ask("raw-then-mock"));
    expect(res.status).toBe(200);
    expect(JSON.stringify(await res.json())).toContain("from the mock");
  });

  it("stops reading when the client goes away mid-body, and releases the hold", async () => {
    const before = balance();
    rig.raw.handle = (_req, rec) => new Response(stalledBody(rec, ['{"id":"msg_1"']), { headers: json });
    const client = new AbortController();
    const pending = rig.post("/v1/messages", ask("raw"), { signal: client.signal }).catch(() => null);
    while (rig.raw.requests.length === 0) await Bun.sleep(5);
    await Bun.sleep(50);
    client.abort();
    await pending;
    // Well before the idle timeout: the client's disconnect, not the clock, closed it.
    const started = performance.now();
    await rig.raw.requests[0]!.gone;
    expect(performance.now() - started).toBeLessThan(IDLE_MS);
    await rig.expectUncharged(before);
  });
});

describe("a stream that stalls", () => {
  it("after its first events: the client gets the dialect's error event, nothing is charged", async () => {
    const before = balance();
    rig.raw.handle = (_req, rec) => new Response(stalledBody(rec, anthropicOpening()), { headers: sseHeaders });
    const res = await rig.post("/v1/messages", ask("raw", { stream: true }));
    expect(res.status).toBe(200);
    const body = await res.text();
    expect(body).toContain('"text":"Hel"');
    expect(body).toContain("event: error");
    expect(body).not.toContain("message_stop");
    await rig.expectUncharged(before);
    await rig.raw.requests[0]!.gone;
    expect(rig.eventsOf(res).map((e) => e.reason)).toContain(`stream cut mid-way: no byte from the upstream for ${IDLE_MS} ms`);
  });

  it("after its headers, before any event: the next route serves the stream", async () => {
    rig.raw.handle = (_req, rec) => new Response(stalledBody(rec, [": opening comment\n\n"]), { headers: sseHeaders });
    rig.mock.script({ kind: "text", text: "streamed by the mock" });
    const res = await rig.post("/v1/messages", ask("raw-then-mock", { stream: true }));
    const body = await res.text();
    expect(body).toContain("streamed");
    expect(body).toContain("message_stop");
  });

  it("that only ever sends comments is ended at the total timeout", async () => {
    const before = balance();
    rig.raw.handle = (_req, rec) =>
      new Response(stalledBody(rec, anthropicOpening(), () => Bun.sleep(50).then(() => ": keep-alive\n\n")), { headers: sseHeaders });
    const started = performance.now();
    const res = await rig.post("/v1/chat/completions", ask("raw", { stream: true }));
    const body = await res.text();
    const elapsed = performance.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(TOTAL_MS - 50);
    expect(elapsed).toBeLessThan(TOTAL_MS + 1_500);
    expect(body).toContain('"error"');
    expect(body).not.toContain("[DONE]");
    await rig.expectUncharged(before);
    expect(rig.eventsOf(res).map((e) => e.reason)).toContain(`stream cut mid-way: the upstream call exceeded its total time of ${TOTAL_MS} ms`);
  });
});

describe("an upstream that sends only a status line and headers", () => {
  it("answers 502 after the idle timeout, well before the first-byte timeout", async () => {
    const before = balance();
    const sockets: Socket[] = [];
    const server = createServer((socket) => {
      sockets.push(socket);
      socket.once("data", () => socket.write("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const providers = rig.gw.services.providers;
    const original = providers.get("raw-a")!;
    providers.set("raw-a", anthropicProvider({ ...original.config, base_url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
    try {
      const started = performance.now();
      const res = await rig.post("/v1/messages", ask("raw"));
      expect(res.status).toBe(502);
      expect(performance.now() - started).toBeLessThan(IDLE_MS + 500);
      await rig.expectUncharged(before);
    } finally {
      providers.set("raw-a", original);
      for (const s of sockets) s.destroy();
      server.close();
    }
  });
});

describe("the first-byte timeout", () => {
  it("still ends an upstream that sends no headers at all", async () => {
    rig.raw.handle = (_req, rec) => rec.gone.then(() => new Response(null));
    const res = await rig.post("/v1/messages", ask("raw"));
    expect(res.status).toBe(502);
    expect(rig.eventsOf(res)[0]).toMatchObject({ reason: "timeout: no answer within 1000 ms" });
  });
});

describe("a stream that keeps talking", () => {
  it("is not cut by the idle timeout, however long its pauses add up to", async () => {
    let n = 0;
    rig.raw.handle = (_req, rec) =>
      new Response(
        stalledBody(rec, anthropicOpening("a"), async () => {
          if (n > 6) return null;
          await Bun.sleep(IDLE_MS / 2);
          if (++n < 6) return sse("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "b" } });
          return [
            sse("content_block_stop", { type: "content_block_stop", index: 0 }),
            sse("message_delta", { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 6 } }),
            sse("message_stop", { type: "message_stop" }),
          ].join("");
        }),
        { headers: sseHeaders },
      );
    const res = await rig.post("/v1/messages", ask("raw", { stream: true }));
    const body = await res.text();
    expect(body).toContain("message_stop");
    expect(body).not.toContain("event: error");
  });
});
