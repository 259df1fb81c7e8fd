// OpenAI-compatible upstreams that ignore stream_options.include_usage and stream no usage at all.
// The gateway bills such a stream on its own count (input estimate, output characters / 4); the
// client must be shown that count and its cost_usd where usage normally goes, and pay exactly that.
import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import type { ChatCompletionChunk } from "openai/resources/chat/completions";
import { usdToNano } from "../../src/core/money.ts";
import { expectedNano } from "../support/prices.ts";
import { sse } from "../support/sse.ts";
import { startTextRig, type TextRig } from "../support/text-rig.ts";

let rig: TextRig;
beforeAll(async () => {
  rig = await startTextRig();
});
afterAll(() => rig.stop());

const MODEL = "gpt-native"; // routed to the OpenAI mock
const TEXT = "Hello there, friend!"; // 20 characters → ceil(20 / 4) = 5 output tokens
const START_USD = 5;

/** A chat stream as such servers send it: text chunks, the finish, [DONE], and no usage anywhere. */
function scriptNoUsageStream(): void {
  const chunk = (delta: object, finish: string | null = null) =>
    sse(undefined, { id: "chatcmpl-nousage", object: "chat.completion.chunk", created: 1, model: "gpt-upstream-1", choices: [{ index: 0, delta, finish_reason: finish }] });
  const body = chunk({ role: "assistant", content: "" }) + TEXT.split(/(?<= )/).map((t) => chunk({ content: t })).join("") + chunk({}, "stop") + sse(undefined, "[DONE]");
  rig.up.script({ kind: "raw", headers: { "content-type": "text/event-stream" }, body });
}

/** The account paid exactly the cost_usd it was shown, which is the catalog price of the counts shown. */
function expectChargedAsShown(accountId: number, shown: { input: number; output: number }, costUsd: number): void {
  const m = rig.gw.money(accountId);
  expect(usdToNano(costUsd)).toBe(expectedNano(shown));
  expect(usdToNano(START_USD) - m.balance).toBe(usdToNano(costUsd));
  expect(m.ledgerSum).toBe(m.balance);
  expect(m.openHolds).toBe(0);
}

type ShownUsage = { prompt_tokens: number; completion_tokens: number; total_tokens: number; cost_usd: number };

async function chatStream(key: string, includeUsage: boolean): Promise<ChatCompletionChunk[]> {
  scriptNoUsageStream();
  const stream = await rig.openai(key).chat.completions.create({
    model: MODEL,
    max_tokens: 100,
    stream: true,
    ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
    messages: [{ role: "user", content: "hi" }],
  });
  const chunks: ChatCompletionChunk[] = [];
  for await (const c of stream) chunks.push(c);
  return chunks;
}

/** Chat usage with the estimate's counts, and the account charged exactly its cost_usd. */
function expectChatUsageCharged(accountId: number, shown: unknown): void {
  const usage = shown as ShownUsage;
  expect(usage).toMatchObject({ completion_tokens: 5, prompt_tokens_details: { cached_tokens: 0 } });
  expect(usage.prompt_tokens).toBeGreaterThan(0);
  expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
  expectChargedAsShown(accountId, { input: usage.prompt_tokens, output: usage.completion_tokens }, usage.cost_usd);
}

describe("a chat stream from an upstream that sends no usage", () => {
  it("ends with a choices:[] usage chunk carrying the estimate and cost_usd when the client asked for include_usage", async () => {
    const a = await rig.gw.account(START_USD);
    const chunks = await chatStream(a.key, true);
    expect(chunks.map((c) => c.choices.map((ch) => ch.delta.content ?? "").join("")).join("")).toBe(TEXT);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.id).toBe(chunks[0]!.id); // the SDK's stream helper merges only chunks with the same, truthy id
    expectChatUsageCharged(a.accountId, last.usage);
  });

  it("puts the estimate with cost_usd on the finish chunk, and sends no choices:[] chunk, without include_usage", async () => {
    const a = await rig.gw.account(START_USD);
    const chunks = await chatStream(a.key, false);
    expect(chunks.every((c) => c.choices.length === 1)).toBe(true);
    const finish = chunks.at(-1)!;
    expect(finish.choices[0]!.finish_reason).toBe("stop");
    expectChatUsageCharged(a.accountId, finish.usage);
  });

  it("gives the stream helper's final completion the usage it was billed on", async () => {
    const a = await rig.gw.account(START_USD);
    scriptNoUsageStream();
    const final = await rig
      .openai(a.key)
      .chat.completions.stream({ model: MODEL, max_tokens: 100, stream_options: { include_usage: true }, messages: [{ role: "user", content: "hi" }] })
      .finalChatCompletion();
    expectChatUsageCharged(a.accountId, final.usage);
  });
});

describe("a Responses stream from an upstream that sends no usage", () => {
  it("completes with the estimate, its details and cost_usd in response.usage instead of null", async () => {
    const a = await rig.gw.account(START_USD);
    scriptNoUsageStream();
    const stream = rig.openai(a.key).responses.stream({ model: MODEL, input: "hi", max_output_tokens: 100 });
    let completed: Record<string, unknown> | null | undefined;
    for await (const ev of stream) if (ev.type === "response.completed") completed = ev.response.usage as unknown as Record<string, unknown>;
    expect((await stream.finalResponse()).output_text).toBe(TEXT);
    const usage = completed as { input_tokens: number; output_tokens: number; total_tokens: number; cost_usd: number };
    expect(usage).toMatchObject({ output_tokens: 5, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } });
    expect(usage.input_tokens).toBeGreaterThan(0);
    expect(usage.total_tokens).toBe(usage.input_tokens + usage.output_tokens);
    expectChargedAsShown(a.accountId, { input: usage.input_tokens, output: usage.output_tokens }, usage.cost_usd);
  });
});

describe("a Messages stream translated from an upstream that sends no usage", () => {
  it("shows the estimate and cost_usd in the final message_delta", async () => {
    const a = await rig.gw.account(START_USD);
    scriptNoUsageStream();
    const stream = rig.anthropic(a.key).messages.stream({ model: MODEL, max_tokens: 100, messages: [{ role: "user", content: "hi" }] });
    let delta: Record<string, number> | undefined;
    stream.on("streamEvent", (ev) => {
      if (ev.type === "message_delta") delta = ev.usage as unknown as Record<string, number>;
    });
    const msg = await stream.finalMessage();
    expect(delta).toMatchObject({ input_tokens: msg.usage.input_tokens, output_tokens: 5, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 });
    expect(msg.usage.input_tokens).toBeGreaterThan(0);
    expectChargedAsShown(a.accountId, { input: delta!.input_tokens!, output: delta!.output_tokens! }, delta!.cost_usd!);
  });
});

describe("a native Messages stream from an upstream that counts nothing", () => {
  it("shows the estimate and cost_usd in the final message_delta and charges exactly that", async () => {
    const a = await rig.gw.account(START_USD);
    const event = (type: string, data: object) => sse(type, { type, ...data });
    const body =
      event("message_start", { message: { id: "msg_nousage", type: "message", role: "assistant", model: "claude-upstream-1", content: [], stop_reason: null, stop_sequence: null } }) +
      event("content_block_start", { index: 0, content_block: { type: "text", text: "" } }) +
      TEXT.split(/(?<= )/).map((t) => event("content_block_delta", { index: 0, delta: { type: "text_delta", text: t } })).join("") +
      event("content_block_stop", { index: 0 }) +
      event("message_delta", { delta: { stop_reason: "end_turn", stop_sequence: null } }) +
      event("message_stop", {});
    rig.up.script({ kind: "raw", headers: { "content-type": "text/event-stream" }, body });
    const stream = rig.anthropic(a.key).messages.stream({ model: "claude-native", max_tokens: 100, messages: [{ role: "user", content: "hi" }] });
    let delta: Record<string, number> | undefined;
    stream.on("streamEvent", (ev) => {
      if (ev.type === "message_delta") delta = ev.usage as unknown as Record<string, number>;
    });
    const msg = await stream.finalMessage();
    expect(msg.content).toMatchObject([{ type: "text", text: TEXT }]);
    expect(delta).toMatchObject({ output_tokens: 5, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 });
    expect(delta!.input_tokens).toBeGreaterThan(0);
    expectChargedAsShown(a.accountId, { input: delta!.input_tokens!, output: delta!.output_tokens! }, delta!.cost_usd!);
  });
});
