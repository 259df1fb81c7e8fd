import { afterAll, beforeAll, beforeEach, describe, expect, it } from "bun:test";
import { anthropicOpening, sseHeaders, stalledBody } from "../support/raw-upstream.ts";
import { ask, startHostileRig, type HostileRig } from "./rig.ts";

// A plain answer's attempt hands its AbortController on to a later attempt once the answer is read
// (relay/routes.ts): whatever one request's call is aborted for must never reach another's.

let rig: HostileRig;
beforeAll(async () => {
  rig = await startHostileRig();
});
beforeEach(() => rig.reset());
afterAll(() => rig.stop());

const json = { "content-type": "application/json" };
const answer = JSON.stringify({
  id: "msg_1", type: "message", role: "assistant", model: "raw-up", content: [{ type: "text", text: "hi" }],
  stop_reason: "end_turn", stop_sequence: null, usage: { input_tokens: 3, output_tokens: 1 },
});

describe("an attempt's abort stays its own", () => {
  it("a stream's client leaving closes that stream's upstream call, not a plain call in flight beside it", async () => {
    const release = Promise.withResolvers<void>();
    rig.raw.handle = async (req, rec) => {
      if (req.headers.get("accept") === "text/event-stream") return new Response(stalledBody(rec, anthropicOpening()), { headers: sseHeaders });
      await release.promise;
      return new Response(answer, { headers: json });
    };
    const client = new AbortController();
    const stream = await rig.post("/v1/messages", ask("raw", { stream: true }), { signal: client.signal });
    await stream.body!.getReader().read();
    const plain = rig.post("/v1/messages", ask("raw"));
    while (rig.raw.requests.length < 2) await Bun.sleep(5);
    client.abort();
    await rig.raw.requests[0]!.gone;
    release.resolve();
    const res = await plain;
    expect(res.status).toBe(200);
    expect(rig.raw.requests[1]!.isGone).toBe(false);
  });

  it("after plain answers, a client leaving mid-call closes its own upstream call and the next call is served", async () => {
    rig.raw.handle = () => new Response(answer, { headers: json });
    for (let i = 0; i < 3; i++) expect((await rig.post("/v1/messages", ask("raw"))).status).toBe(200);
    rig.raw.handle = (_req, rec) => new Response(stalledBody(rec, ['{"id":"msg_1"']), { headers: json });
    const client = new AbortController();
    const pending = rig.post("/v1/messages", ask("raw"), { signal: client.signal }).catch(() => null);
    while (rig.raw.requests.length < 4) await Bun.sleep(5);
    await Bun.sleep(50);
    client.abort();
    await pending;
    await rig.raw.requests[3]!.gone;
    rig.raw.handle = () => new Response(answer, { headers: json });
    expect((await rig.post("/v1/messages", ask("raw"))).status).toBe(200);
  });
});
