import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { startGatewayOnMock, type TestGateway } from "../support/gateway.ts";
import { messagesBody, postWithApiKey, sqlGet } from "../support/keyed.ts";
import type { MockUpstream } from "../support/mock-upstream.ts";

// Issue 14 item 8: usage that reports no valid counts (missing, negative, non-integer, strings) is no
// usage: the estimate is billed, never zero.

const PRICES = { input: 3, output: 15 };
const model = (id: string, provider: string) => ({ id, modalities: ["text"], endpoints: ["messages", "chat.completions"], pricing: PRICES, routes: [{ provider, model: `${id}-up` }] });

let up: MockUpstream;
let gw: TestGateway;
let stop: () => Promise<void>;
beforeAll(async () => {
  ({ up, gw, stop } = await startGatewayOnMock({ openai: true, models: [model("claude-u", "anthropic"), model("gpt-u", "openai")], limits: { default_rpm: 10_000 } }));
});
afterAll(() => stop());

const TEXT = "a".repeat(400); // 100 tokens at 4 characters each
// A JSON answer's output is estimated from its bytes (envelope included), a stream's from its text.
const AT_LEAST_TEXT = 100;

async function billed(path: string, modelId: string, behaviour: Parameters<MockUpstream["script"]>[0], stream = false) {
  const a = await gw.account(10);
  up.script(behaviour);
  const body = path === "/v1/messages" ? { ...messagesBody(1000, modelId), stream } : { model: modelId, max_tokens: 1000, stream, messages: [{ role: "user", content: "hi" }] };
  const res = await postWithApiKey(gw, path, body, a.key);
  expect(res.status).toBe(200);
  await res.text();
  const id = res.headers.get("x-gateway-request-id")!;
  for (let i = 0; i < 50 && gw.money(a.accountId).openHolds > 0; i++) await Bun.sleep(10);
  const log = sqlGet<{ output_tokens: number; cost_nano: number }>(gw, "SELECT output_tokens, cost_nano FROM request_logs WHERE request_id = ?", id);
  const charge = sqlGet<{ c: number | null }>(gw, "SELECT -sum(amount_nano) AS c FROM ledger_entries WHERE request_id = ?", id).c ?? 0;
  return { log, charge };
}

const anthropicAnswer = (usage: unknown) => ({
  id: "msg_x",
  type: "message",
  role: "assistant",
  model: "m",
  content: [{ type: "text", text: TEXT }],
  stop_reason: "end_turn",
  stop_sequence: null,
  ...(usage === undefined ? {} : { usage }),
});

describe("a usage without valid counts", () => {
  it("bills the estimate when a Messages-kind upstream answers a Chat client without usage", async () => {
    const { log, charge } = await billed("/v1/chat/completions", "claude-u", { kind: "raw", body: anthropicAnswer(undefined) });
    expect(log.output_tokens).toBeGreaterThanOrEqual(AT_LEAST_TEXT);
    expect(charge).toBeGreaterThan(0);
  });

  it("bills the estimate for a negative output count (Messages)", async () => {
    const { log, charge } = await billed("/v1/messages", "claude-u", { kind: "raw", body: anthropicAnswer({ input_tokens: 10, output_tokens: -5 }) });
    expect(log.output_tokens).toBeGreaterThanOrEqual(AT_LEAST_TEXT);
    expect(charge).toBeGreaterThan(0);
  });

  it("bills the estimate for counts sent as strings (Chat)", async () => {
    const answer = {
      id: "chatcmpl-x",
      object: "chat.completion",
      created: 1,
      model: "m",
      choices: [{ index: 0, message: { role: "assistant", content: TEXT }, finish_reason: "stop" }],
      usage: { prompt_tokens: "10", completion_tokens: "100", total_tokens: "110" },
    };
    const { log, charge } = await billed("/v1/chat/completions", "gpt-u", { kind: "raw", body: answer });
    expect(log.output_tokens).toBeGreaterThanOrEqual(AT_LEAST_TEXT);
    expect(charge).toBeGreaterThan(0);
  });

  it("bills the estimate for a fractional count (Chat, streamed)", async () => {
    const { log, charge } = await billed("/v1/chat/completions", "gpt-u", { kind: "text", text: TEXT, chunks: 4, usage: { output: 0.5 } }, true);
    expect(log.output_tokens).toBe(100);
    expect(charge).toBeGreaterThan(0);
  });

  // Found by the long upstream fuzz: message_start without valid counts, then message_delta's output
  // alone, billed an input of 0 (and so 0 in all for an output of 0).
  it("bills the estimated input when message_start has no valid counts and message_delta gives output only", async () => {
    const { charge } = await billed("/v1/messages", "claude-u", { kind: "text", text: TEXT, chunks: 4, usage: { input: null as never, output: 0 } }, true);
    expect(charge).toBeGreaterThan(0);
  });

  it("bills the estimated output for a negative count in message_delta (Messages, streamed)", async () => {
    const { log, charge } = await billed("/v1/messages", "claude-u", { kind: "text", text: TEXT, chunks: 4, usage: { output: -5 } }, true);
    expect(log.output_tokens).toBe(100);
    expect(charge).toBeGreaterThan(0);
  });
});
