import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "bun:test";
import type { Route } from "../../src/catalog/catalog.ts";
import { AnsweredAttempt } from "../../src/relay/attempt.ts";
import type { KeySlot } from "../../src/relay/capacity.ts";
import type { RelayCall } from "../../src/relay/context.ts";
import { Cutoff } from "../../src/relay/cutoff.ts";
import { AttemptClock } from "../../src/relay/timeouts.ts";
import type { Provider } from "../../src/upstreams/types.ts";
import { relayText } from "../../src/relay/text.ts";
import type { JsonObject } from "../../src/wire/shapes.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { postJson, hi } from "../support/http.ts";
import { anthropicOpening, sseHeaders, stalledBody, startRawUpstream, type RawUpstream } from "../support/raw-upstream.ts";
import { sse } from "../support/sse.ts";

// A streamed answer is handed over by the route loop with its upstream call still open, counted in
// flight on its provider key and held by the instance's cutoff: the stream's relay lets go of them
// when the stream ends. Whatever ends the request between the two (a set-up that throws) must let go
// of them too, and a stream must let go of them once. The providers' timeouts are the defaults (15
// minutes in all): nothing here is ended by a clock.

let raw: RawUpstream;
let gw: TestGateway;
let acct: { key: string; accountId: number; keyId: number };
beforeAll(async () => {
  raw = await startRawUpstream();
  gw = await startTestGateway({
    limits: { default_rpm: 100_000 },
    // One provider per describe: a key one test left in flight does not show in the other's.
    providers: ["set-up", "relayed"].map((id) => ({ id, kind: "anthropic", base_url: raw.url, api_key: `sk-ant-${id}-0000000000` })),
    models: ["set-up", "relayed"].map((id) => ({ id, modalities: ["text"], endpoints: ["messages"], pricing: { input: 3, output: 15 }, routes: [{ provider: id, model: "up" }] })),
  });
  acct = await gw.account(10);
});
beforeEach(() => {
  raw.requests.length = 0;
});
// Whatever a failing test left held is ended, so that it does not show in the next one.
afterEach(() => gw.services.cutoff.cut(new Error("the test is over")));
afterAll(async () => {
  await gw.stop();
  await raw.stop();
});

const slot = (provider: string) => gw.services.capacity.pool(provider).slots[0]!;

/** What the requests still hold of the instance: the provider key's count in flight, the cutoff's calls, the account's money holds. */
const held = (provider: string) => ({ inFlight: slot(provider).inFlight, cutoff: gw.services.cutoff.held, holds: gw.money(acct.accountId).openHolds });
const NOTHING = { inFlight: 0, cutoff: 0, holds: 0 };

/** Waits up to `ms` for `done`; the loaded machine gets generous bounds, the fixed code takes milliseconds. */
async function within(ms: number, done: () => boolean): Promise<void> {
  const until = Date.now() + ms;
  while (!done() && Date.now() < until) await Bun.sleep(10);
}

/** A request as the pipeline hands it to the relay: the account's key, the body read and parsed. */
async function callOf(body: JsonObject): Promise<RelayCall> {
  const svc = gw.services;
  const key = (await svc.keys.lookup(acct.key))!;
  const requestId = `gw_handoff_${Date.now()}`;
  return {
    svc,
    request: new Request(`${gw.url}/v1/messages`, { method: "POST" }),
    requestId,
    started: performance.now(),
    key,
    bytes: new TextEncoder().encode(JSON.stringify(body)),
    json: body,
    form: null,
    search: "",
    log: { requestId, method: "POST", path: "/v1/messages", status: 0, latencyMs: 0, accountId: key.accountId, keyId: key.id },
    hold: null,
  };
}

describe("a streamed answer between the route loop and its relay", () => {
  it("a stream whose set-up throws after the upstream answered lets go of its key, its cutoff hold and its upstream connection", async () => {
    raw.handle = (_req, rec) => new Response(stalledBody(rec, anthropicOpening()), { headers: sseHeaders });
    const body = { model: "set-up", max_tokens: 20, stream: true, messages: hi };
    const call = await callOf(body);
    const model = gw.services.catalog.lookup("set-up")!;
    const failing = relayText(call, model, {
      dialect: "messages",
      body,
      maxOut: 20,
      stream: true,
      answer: (out) => out,
      machine() {
        throw new Error("the stream's set-up failed");
      },
    });
    expect(failing).rejects.toThrow("the stream's set-up failed");
    await failing.catch(() => {});
    expect(raw.requests).toHaveLength(1);
    await within(3_000, () => raw.requests[0]!.isGone);
    expect(raw.requests[0]!.isGone).toBe(true);
    expect(held("set-up")).toEqual(NOTHING);
  }, 20_000);
});

describe("a streamed answer's key is let go once", () => {
  it("a stream that ends normally leaves its key at 0 in flight, not -1, and no cutoff hold", async () => {
    const rest = [
      sse("content_block_stop", { type: "content_block_stop", index: 0 }),
      sse("message_delta", { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 3 } }),
      sse("message_stop", { type: "message_stop" }),
    ];
    raw.handle = () => new Response([...anthropicOpening(), ...rest].join(""), { headers: sseHeaders });
    const res = await postJson(gw, "/v1/messages", acct.key, { model: "relayed", max_tokens: 20, stream: true, messages: hi });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("message_stop");
    await within(2_000, () => slot("relayed").inFlight <= 0 && gw.services.cutoff.held === 0);
    // A second release would show after the first: give it the time the first took and more.
    await Bun.sleep(50);
    expect(held("relayed")).toEqual(NOTHING);
  }, 20_000);

  it("a stream the client leaves mid-way leaves its key at 0 in flight, not -1, and closes the upstream connection", async () => {
    raw.handle = (_req, rec) => new Response(stalledBody(rec, anthropicOpening()), { headers: sseHeaders });
    const res = await postJson(gw, "/v1/messages", acct.key, { model: "relayed", max_tokens: 20, stream: true, messages: hi });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain("message_start");
    expect(slot("relayed").inFlight).toBe(1);
    await reader.cancel();
    await within(5_000, () => raw.requests[0]!.isGone && slot("relayed").inFlight <= 0 && gw.services.cutoff.held === 0 && gw.money(acct.accountId).openHolds === 0);
    await Bun.sleep(50);
    expect(raw.requests[0]!.isGone).toBe(true);
    expect(held("relayed")).toEqual(NOTHING);
  }, 20_000);
});

describe("an answered attempt", () => {
  it("released twice lets go of its key and its cutoff hold once", () => {
    const abort = new AbortController();
    const cutoff = new Cutoff();
    cutoff.hold(abort);
    const slot = { inFlight: 1 } as KeySlot;
    const clock = new AttemptClock(abort, { firstByteMs: 60_000, idleMs: 60_000, totalMs: 60_000 });
    const attempt = new AnsweredAttempt({} as Route, {} as Provider, new Response("x"), abort, 1, slot, clock, cutoff);
    attempt.release();
    attempt.release();
    expect({ inFlight: slot.inFlight, cutoff: cutoff.held }).toEqual({ inFlight: 0, cutoff: 0 });
  });
});
