import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import type { TextRig } from "../support/text-rig.ts";
import { keyHeaders, send } from "../support/http.ts";
import { errorOf } from "../support/errors.ts";
import { ledgerRows, postWithApiKey } from "../support/keyed.ts";
import { estimateTokens } from "../../src/ledger/estimate.ts";
import { CAPPED, postResponses, startResponsesRig } from "./support.ts";

// Attacks on the Responses adapter through its translation: work done before the hold, bodies that
// grow on their way upstream, and a model's estimate learnt from them (docs/reliability.md).

let rig: TextRig;
beforeAll(async () => {
  rig = await startResponsesRig();
});
afterAll(() => rig.stop());

const model = "gpt-native";
const functionCalls = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ type: "function_call", call_id: `c${i}`, name: "f", arguments: "{}" }));
/** A namespace whose description is copied into each of its tools, were it copied. */
const namespaced = (descriptionBytes: number, children: number) => ({
  type: "namespace",
  name: "mcp__docs",
  description: "d".repeat(descriptionBytes),
  tools: Array.from({ length: children }, (_, i) => ({ type: "function", name: `t${i}` })),
});
const upstreamBytes = () => rig.up.requests.at(-1)!.rawBody.length;

/** The longest a GET /healthz waited while `work` ran, polled back to back. */
async function worstHealthzMs<T>(work: () => Promise<T>): Promise<{ result: T; worstMs: number }> {
  let done = false;
  let worstMs = 0;
  const poll = (async () => {
    while (!done) {
      const t = performance.now();
      await (await send(rig.gw, "/healthz")).arrayBuffer();
      worstMs = Math.max(worstMs, performance.now() - t);
      await Bun.sleep(2);
    }
  })();
  const result = await work();
  done = true;
  await poll;
  return { result, worstMs };
}

describe("work before the reserve", () => {
  it("answers a 0 USD key's 100,000 function_call items with 402 in under a second, /healthz answering meanwhile", async () => {
    // Before the fix the translation alone took 13 to 28 s; the body is now refused before it is read.
    const body = JSON.stringify({ model, input: functionCalls(100_000) });
    const poor = await rig.gw.account(0);
    const { result, worstMs } = await worstHealthzMs(async () => {
      const t = performance.now();
      const res = await send(rig.gw, "/v1/responses", { method: "POST", headers: keyHeaders(poor.key), body });
      const error = await errorOf(res);
      return { status: res.status, code: error.code, ms: performance.now() - t };
    });
    expect(result).toMatchObject({ status: 402, code: "insufficient_balance" });
    expect(result.ms).toBeLessThan(1000);
    expect(worstMs).toBeLessThan(100);
  }, 120_000);
});

describe("bodies that grow in translation", () => {
  it("sends the request whose namespace description grew 76x at about its own size", async () => {
    const body = { model, input: "hi", tools: [namespaced(10_000, 80)] };
    const res = await postResponses(rig, body);
    expect(res.status).toBe(200);
    expect(upstreamBytes() / JSON.stringify(body).length).toBeLessThan(1.2);
  });

  it("admits a 0.10 USD account's concurrent large requests only as far as its balance covers, with no shortfall", async () => {
    const acct = await rig.gw.account("0.10");
    // 100 KB client bytes; copied per tool, the description made 10 MB (7.50 USD of input each).
    const body = { model, input: "hi", max_output_tokens: 16, tools: [namespaced(100_000, 100)] };
    const answers = await Promise.all(Array.from({ length: 15 }, () => postResponses(rig, body, acct.key)));
    const statuses = answers.map((r) => r.status);
    await Promise.all(answers.map((r) => r.arrayBuffer()));
    const charges = ledgerRows(rig.gw, acct.accountId).filter((r) => r.kind === "charge");
    // One hold of about 0.077 USD fits in 0.10 USD; each later one met the rest of the balance.
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 402)).toHaveLength(14);
    expect(charges.reduce((n, r) => n + r.shortfall_nano, 0)).toBe(0);
    expect(rig.gw.money(acct.accountId).balance).toBeGreaterThan(0);
  });

  it("refuses 413 a body that would pass 20 MiB once translated, and the route's circuit stays closed for other accounts", async () => {
    // A custom tool travels as a function with a fixed schema: about 9x its 30 bytes.
    const tools = Array.from({ length: 90_000 }, (_, i) => ({ type: "custom", name: `c${i}` }));
    const big = { model, input: "hi", max_output_tokens: 16, tools };
    const sender = await rig.gw.account(100);
    for (let i = 0; i < 4; i++) {
      const res = await postResponses(rig, big, sender.key);
      expect(res.status).toBe(413);
      expect((await errorOf(res)).code).toBe("request_too_large");
    }
    const other = await rig.gw.account(1);
    const plain = await postResponses(rig, { model, input: "hi" }, other.key);
    expect(plain.status).toBe(200);
    const status = (await (await send(rig.gw, "/status")).json()) as { models: { id: string; state: string }[] };
    expect(status.models.find((m) => m.id === model)!.state).toBe("ok");
    expect(rig.gw.money(sender.accountId).ledgerSum).toBe(100e9);
  }, 60_000);
});

describe("estimates others can poison", () => {
  it("keeps another account's count_tokens near the plain estimate after 25 requests that grew 9x in translation", async () => {
    // Custom tools still grow on their way upstream (each gains a fixed schema); the namespace shape
    // (76x) did too. Learnt on the client's bytes, either taught the model a fraction of a byte a token.
    const attacker = await rig.gw.account(100);
    const tools = Array.from({ length: 300 }, (_, i) => ({ type: "custom", name: `c${i}` }));
    for (let i = 0; i < 25; i++) {
      const res = await postResponses(rig, { model: CAPPED.id, input: `hi ${i}`, tools }, attacker.key);
      expect(res.status).toBe(200);
    }
    const message = { model: CAPPED.id, messages: [{ role: "user", content: "How many tokens is this sentence, roughly, by your count?" }] };
    const bytes = JSON.stringify(message).length;
    const res = await postWithApiKey(rig.gw, "/v1/messages/count_tokens", message, (await rig.gw.account(1)).key);
    const answer = (await res.json()) as { input_tokens: number; gateway: { method: string } };
    expect(answer.gateway.method).toBe("byte_estimate_calibrated");
    const plain = estimateTokens(bytes);
    expect(answer.input_tokens).toBeGreaterThanOrEqual(plain / 2);
    expect(answer.input_tokens).toBeLessThanOrEqual(plain * 2);
  }, 60_000);
});
