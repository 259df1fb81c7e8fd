import { afterAll, beforeAll, beforeEach, describe, expect, it } from "bun:test";
import { MAX_SSE_EVENT_BYTES } from "../../src/wire/sse.ts";
import { anthropicOpening, sseHeaders, stalledBody } from "../support/raw-upstream.ts";
import { ask, startHostileRig, type HostileRig } from "./rig.ts";

// Issue 14 item 10: an SSE line (or event) that never ends grew the gateway's memory without bound.
// Past 16 MiB the stream now fails as an upstream failure: an error event, nothing charged.

let rig: HostileRig;
beforeAll(async () => {
  rig = await startHostileRig();
});
beforeEach(() => rig.reset());
afterAll(() => rig.stop());

const MiB = 1024 * 1024;
const balance = () => rig.gw.money(rig.acct.accountId).balance;
const endlessLine = "x".repeat(MiB);
const endlessDataLines = "data: y\n".repeat(MiB / 8);
const overLimit = `stream cut mid-way: the upstream sent an SSE event over ${MAX_SSE_EVENT_BYTES} bytes without ending it`;

describe("an upstream SSE event that never ends", () => {
  it("as one endless line: the stream ends with the dialect's error event, uncharged, the upstream closed", async () => {
    const before = balance();
    let sent = 0;
    rig.raw.handle = (_req, rec) =>
      new Response(stalledBody(rec, [...anthropicOpening(), "data: "], () => ((sent += MiB), endlessLine)), { headers: sseHeaders });
    const res = await rig.post("/v1/messages", ask("raw", { stream: true }));
    const body = await res.text();
    expect(body).toContain('"text":"Hel"');
    expect(body).toContain("event: error");
    expect(body).not.toContain("xxxx");
    await rig.raw.requests[0]!.gone;
    // Read a little past the limit, not on and on.
    expect(sent).toBeLessThan(MAX_SSE_EVENT_BYTES + 16 * MiB);
    await rig.expectUncharged(before);
    expect(rig.eventsOf(res).map((e) => e.reason)).toContain(overLimit);
  });

  it("as endless data lines without the blank line: the same, on a Chat client", async () => {
    const before = balance();
    rig.raw.handle = (_req, rec) => new Response(stalledBody(rec, anthropicOpening(), () => endlessDataLines), { headers: sseHeaders });
    const res = await rig.post("/v1/chat/completions", ask("raw", { stream: true }));
    const body = await res.text();
    expect(body).toContain('"error"');
    expect(body).not.toContain("[DONE]");
    await rig.expectUncharged(before);
    expect(rig.eventsOf(res).map((e) => e.reason)).toContain(overLimit);
  });

  it("before the first event: that route failed, the next one serves the stream", async () => {
    rig.raw.handle = (_req, rec) => new Response(stalledBody(rec, ["data: "], () => endlessLine), { headers: sseHeaders });
    rig.mock.script({ kind: "text", text: "served by the mock" });
    const res = await rig.post("/v1/messages", ask("raw-then-mock", { stream: true }));
    const body = await res.text();
    expect(body).toContain("message_stop");
    expect(rig.eventsOf(res)[0]).toMatchObject({ event: "upstream_failed", route: "raw-a/raw-then-mock-up", reason: overLimit.replace("stream cut mid-way: ", "") });
  });
});
