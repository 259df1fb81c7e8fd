import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { events } from "../../src/core/events.ts";
import { sqlGet } from "../support/keyed.ts";
import { anthropicOpening, sseHeaders, stalledBody } from "../support/raw-upstream.ts";
import { sse } from "../support/sse.ts";
import { relayInProcess, START } from "./inprocess-relay.ts";
import { ask, startHostileRig, type HostileRig } from "./rig.ts";

const lines: Record<string, unknown>[] = [];
const restore = events.redirect((line) => lines.push(JSON.parse(line) as Record<string, unknown>));
afterAll(restore);

describe("a client that leaves while the relay waits on the upstream", () => {
  it("is not reported as an upstream failure", async () => {
    const upstream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode(START));
      },
    });
    const reader = await relayInProcess(upstream);
    await reader.read();
    const waiting = reader.read().catch(() => {});
    await Bun.sleep(10);
    await reader.cancel();
    await waiting;
    await Bun.sleep(10);
    expect(lines.filter((l) => l.event === "upstream_failed")).toEqual([]);
  });
});

describe("a stream of CJK text the client cancels after 19 of its 20 deltas", () => {
  // The upstream would have reported 80 output tokens for its 20 deltas of 4 characters (a token a
  // character); the client took 19 and left. Billed at 4 characters a token, the 76 delivered
  // characters were charged as 19 tokens: a quarter of what the provider bills for them.
  const DELTA = "数据分析"; // 4 characters, 12 UTF-8 bytes
  let rig: HostileRig;
  beforeAll(async () => {
    rig = await startHostileRig();
  });
  afterAll(() => rig.stop());

  it("is charged the delivered characters a token each (76 output tokens), not 4 characters a token (19)", async () => {
    rig.raw.handle = (_req, rec) => {
      const deltas = Array.from({ length: 18 }, () => sse("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: DELTA } }));
      // The 20th delta and the final usage never come: the client leaves first.
      return new Response(stalledBody(rec, [...anthropicOpening(DELTA), ...deltas]), { headers: sseHeaders });
    };
    const res = await rig.post("/v1/messages", ask("raw", { stream: true, max_tokens: 200 }));
    expect(res.status).toBe(200);
    const requestId = res.headers.get("x-gateway-request-id")!;
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let seen = "";
    while ((seen.match(/text_delta/g) ?? []).length < 19) seen += decoder.decode((await reader.read()).value, { stream: true });
    await reader.cancel();
    for (let i = 0; i < 50 && rig.gw.money(rig.acct.accountId).openHolds > 0; i++) await Bun.sleep(20);

    const log = sqlGet<{ error_code: string; input_tokens: number; output_tokens: number; cost_nano: number }>(
      rig.gw,
      "SELECT error_code, input_tokens, output_tokens, cost_nano FROM request_logs WHERE request_id = ?",
      requestId,
    );
    expect(log.error_code).toBe("client_cancelled");
    expect(log.output_tokens).toBe(19 * DELTA.length);
    // message_start's 5 input tokens at $3 and 76 output tokens at $15 a million.
    expect(log.cost_nano).toBe(5 * 3_000 + 76 * 15_000);
    expect(rig.gw.money(rig.acct.accountId)).toMatchObject({ openHolds: 0, reserved: 0 });
  });
});
