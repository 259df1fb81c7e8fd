import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { sqlGet } from "../support/keyed.ts";
import { sseHeaders, stalledBody } from "../support/raw-upstream.ts";
import { sse } from "../support/sse.ts";
import { ask, startHostileRig, type HostileRig } from "./rig.ts";
import { USAGE_GRACE_MS } from "../../src/relay/stream.ts";

// A Chat upstream sends its finish_reason, then (stream_options.include_usage) a last chunk with the
// usage. A client that leaves between the two had the whole answer; billing it the estimate of the
// delivered text undercharged what the provider bills. The relay waits a short grace for that count.

const PROMPT = 1_000;
const COMPLETION = 571;
const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  sse(undefined, { id: "c1", object: "chat.completion.chunk", created: 1, model: "up", choices: [{ index: 0, delta, finish_reason: finish }] });

let rig: HostileRig;
beforeAll(async () => {
  rig = await startHostileRig();
});
afterAll(() => rig.stop());

describe("a Chat stream whose client leaves after the finish, before the usage chunk", () => {
  for (const [path, marker, body] of [
    ["/v1/chat/completions", '"finish_reason":"stop"', {}],
    ["/v1/messages", '"stop_reason":"end_turn"', {}],
    ["/v1/responses", "response.output_text.done", { input: "hi", max_output_tokens: 50 }],
  ] as const)
  it(`on ${path} is billed the upstream's usage when it arrives within the grace`, async () => {
    rig.raw.handle = (_req, rec) => {
      let sentUsage = false;
      return new Response(
        stalledBody(rec, [chunk({ role: "assistant", content: "" }), chunk({ content: "Hello there, this is the answer." }), chunk({}, "stop")], async () => {
          if (sentUsage) return null;
          sentUsage = true;
          // The client leaves meanwhile; the usage comes well within the upstream's idle timeout.
          await Bun.sleep(150);
          return sse(undefined, { id: "c1", object: "chat.completion.chunk", created: 1, model: "up", choices: [], usage: { prompt_tokens: PROMPT, completion_tokens: COMPLETION, total_tokens: PROMPT + COMPLETION } }) + "data: [DONE]\n\n";
        }),
        { headers: sseHeaders },
      );
    };
    const res = await rig.post(path, path === "/v1/responses" ? { model: "raw-openai", stream: true, ...body } : ask("raw-openai", { stream: true }));
    expect(res.status).toBe(200);
    const requestId = res.headers.get("x-gateway-request-id")!;
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let seen = "";
    while (!seen.includes(marker)) seen += decoder.decode((await reader.read()).value, { stream: true });
    await reader.cancel();
    for (let i = 0; i < 150 && rig.gw.money(rig.acct.accountId).openHolds > 0; i++) await Bun.sleep(20);

    const log = sqlGet<{ input_tokens: number; output_tokens: number; cost_nano: number }>(
      rig.gw,
      "SELECT input_tokens, output_tokens, cost_nano FROM request_logs WHERE request_id = ?",
      requestId,
    );
    expect({ input: log.input_tokens, output: log.output_tokens }).toEqual({ input: PROMPT, output: COMPLETION });
    expect(log.cost_nano).toBe(PROMPT * 3_000 + COMPLETION * 15_000);
    expect(rig.gw.money(rig.acct.accountId)).toMatchObject({ openHolds: 0, reserved: 0 });
  });
});

describe("a Chat stream whose client leaves after the finish, and whose usage never comes", () => {
  it("is let go within the grace and billed the estimate of the delivered text", async () => {
    // Comments every 100 ms keep the upstream within its idle timeout: only the grace lets it go.
    rig.raw.handle = (_req, rec) =>
      new Response(
        stalledBody(rec, [chunk({ role: "assistant", content: "" }), chunk({ content: "Hello there, this is the answer." }), chunk({}, "stop")], async () => {
          await Bun.sleep(100);
          return rec.isGone ? null : ": waiting\n\n";
        }),
        { headers: sseHeaders },
      );
    const res = await rig.post("/v1/responses", { model: "raw-openai", stream: true, input: "hi", max_output_tokens: 50 });
    const requestId = res.headers.get("x-gateway-request-id")!;
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let seen = "";
    while (!seen.includes("response.output_text.done")) seen += decoder.decode((await reader.read()).value, { stream: true });
    const left = performance.now();
    await reader.cancel();
    for (let i = 0; i < 200 && rig.gw.money(rig.acct.accountId).openHolds > 0; i++) await Bun.sleep(20);
    const waited = performance.now() - left;
    expect(waited).toBeGreaterThan(USAGE_GRACE_MS - 200);
    expect(waited).toBeLessThan(USAGE_GRACE_MS + 1_500);
    expect(rig.raw.requests.at(-1)!.isGone).toBe(true);
    const log = sqlGet<{ error_code: string; output_tokens: number }>(rig.gw, "SELECT error_code, output_tokens FROM request_logs WHERE request_id = ?", requestId);
    expect(log.error_code).toBe("client_cancelled");
    // "Hello there, this is the answer." is 32 bytes: 8 tokens by the plain rule.
    expect(log.output_tokens).toBe(8);
    expect(rig.gw.money(rig.acct.accountId)).toMatchObject({ openHolds: 0, reserved: 0 });
  });
});
