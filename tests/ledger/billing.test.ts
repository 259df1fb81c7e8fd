import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { startGatewayOnMock, type TestGateway } from "../support/gateway.ts";
import { ledgerRows, messagesBody, postWithApiKey, sqlGet } from "../support/keyed.ts";
import { errorOf } from "../support/errors.ts";
import type { MockUpstream } from "../support/mock-upstream.ts";
import { lastStreamCost, PRICES, usdToNanoShown } from "../support/prices.ts";

// Costs here are computed by hand from the catalog prices (USD per 1M tokens = nano-dollars per
// token × 1000) and the token counts the mock upstream reports.
const CHEAP = { input: 0.075, output: 0.3, cache_read: 0.0075, cache_write: 0.09375 };
const model = (id: string, provider: string, pricing: Record<string, number>) => ({
  id,
  modalities: ["text"],
  endpoints: ["messages", "chat.completions"],
  pricing,
  routes: [{ provider, model: `${id}-upstream` }],
});

let up: MockUpstream;
let gw: TestGateway;
let stop: () => Promise<void>;
beforeAll(async () => {
  ({ up, gw, stop } = await startGatewayOnMock({
    openai: true,
    limits: { default_rpm: 10_000 },
    models: [model("claude-priced", "anthropic", PRICES), model("gpt-priced", "openai", PRICES), model("claude-cheap", "anthropic", CHEAP)],
  }));
});
afterAll(() => stop());

const costOf = (text: string) => usdToNanoShown(lastStreamCost(text)!);

/** One request with the usage the upstream reports; returns what the client, the ledger and the log say. */
async function charged(path: string, modelId: string, usage: Record<string, number>, opts: { stream?: boolean; usd?: number; maxTokens?: number } = {}) {
  const a = await gw.account(opts.usd ?? 10);
  up.script({ kind: "text", text: "cached answer", usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, ...usage } });
  const body = { ...messagesBody(opts.maxTokens ?? 1000, modelId), stream: opts.stream ?? false };
  const res = await postWithApiKey(gw, path, body, a.key);
  expect(res.status).toBe(200);
  const text = await res.text();
  const requestId = res.headers.get("x-gateway-request-id")!;
  const rows = ledgerRows(gw, a.accountId).filter((r) => r.kind === "charge");
  const log = sqlGet<Record<string, number>>(gw, "SELECT input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_nano FROM request_logs WHERE request_id = ?", requestId);
  return { a, text, clientCost: costOf(text), rows, log, money: gw.money(a.accountId), opening: (opts.usd ?? 10) * 1e9 };
}

describe("every price component, end to end", () => {
  // 1234 × 3000 + 567 × 15000 + 8910 × 300 + 1112 × 3750 nano-dollars
  const ANTHROPIC = { input: 1234, output: 567, cacheRead: 8910, cacheWrite: 1112 };
  const EXPECTED = 3_702_000 + 8_505_000 + 2_673_000 + 4_170_000;

  it("charges Anthropic input, output, cache_read_input_tokens and cache_creation_input_tokens each at its own price", async () => {
    const r = await charged("/v1/messages", "claude-priced", ANTHROPIC);
    expect(r.clientCost).toBe(EXPECTED);
    expect(r.rows.map((x) => x.amount_nano)).toEqual([-EXPECTED]);
    expect(r.money.balance).toBe(r.opening - EXPECTED);
    expect(r.log).toEqual({ input_tokens: 1234, output_tokens: 567, cache_read_tokens: 8910, cache_write_tokens: 1112, cost_nano: EXPECTED });
  });

  it("charges the same for the same usage at the end of a stream, and shows it in the final usage", async () => {
    const r = await charged("/v1/messages", "claude-priced", ANTHROPIC, { stream: true });
    expect(r.text).toContain("message_stop");
    expect(r.clientCost).toBe(EXPECTED);
    expect(r.rows.map((x) => x.amount_nano)).toEqual([-EXPECTED]);
  });

  it("charges the same when a Chat client reaches the Anthropic upstream by translation", async () => {
    const r = await charged("/v1/chat/completions", "claude-priced", ANTHROPIC);
    expect(r.clientCost).toBe(EXPECTED);
    const usage = (JSON.parse(r.text) as { usage: Record<string, unknown> }).usage;
    expect(usage.prompt_tokens).toBe(1234 + 8910 + 1112);
  });

  it("bills OpenAI cached_tokens at the cache-read price and only the rest of prompt_tokens as input", async () => {
    // The mock sends prompt_tokens = 1000 + 4000 and cached_tokens = 4000.
    const r = await charged("/v1/chat/completions", "gpt-priced", { input: 1000, cacheRead: 4000, output: 200 });
    const expected = 1000 * 3_000 + 4000 * 300 + 200 * 15_000;
    expect(r.clientCost).toBe(expected);
    expect(r.rows.map((x) => x.amount_nano)).toEqual([-expected]);
    expect(r.log).toMatchObject({ input_tokens: 1000, cache_read_tokens: 4000, output_tokens: 200 });
  });

  it("bills an OpenAI stream's final usage chunk the same way", async () => {
    const r = await charged("/v1/chat/completions", "gpt-priced", { input: 1000, cacheRead: 4000, output: 200 }, { stream: true });
    expect(r.clientCost).toBe(1000 * 3_000 + 4000 * 300 + 200 * 15_000);
  });

  it("prices sub-cent rates ($0.075, $0.3, $0.0075, $0.09375 per 1M) to the nano-dollar, rounding up once", async () => {
    // 1234 × 75 + 567 × 300 + 8911 × 7.5 + 1000 × 93.75 = 92 550 + 170 100 + 66 832.5 + 93 750 → 423 233
    const r = await charged("/v1/messages", "claude-cheap", { input: 1234, output: 567, cacheRead: 8911, cacheWrite: 1000 });
    expect(r.clientCost).toBe(423_233);
    expect(r.rows.map((x) => x.amount_nano)).toEqual([-423_233]);
  });
});

describe("a cost above the estimate and above the balance", () => {
  it("takes the balance to exactly 0, records the shortfall on the charge row and returns the real cost", async () => {
    // max_tokens 1 reserves a few hundredths of a cent; the upstream then reports 1M output tokens ($15).
    const r = await charged("/v1/messages", "claude-priced", { input: 10, output: 1_000_000 }, { usd: 0.01, maxTokens: 1 });
    const cost = 10 * 3_000 + 15_000_000_000;
    expect(r.clientCost).toBe(cost);
    expect(r.money.balance).toBe(0);
    expect(r.rows).toHaveLength(1);
    expect(r.rows[0]).toMatchObject({ amount_nano: -10_000_000, shortfall_nano: cost - 10_000_000 });
    expect(r.money.ledgerSum).toBe(0);
    expect([r.money.reserved, r.money.openHolds]).toEqual([0, 0]);
  });

  it("then refuses the next request with 402 insufficient_balance", async () => {
    const r = await charged("/v1/messages", "claude-priced", { input: 10, output: 1_000_000 }, { usd: 0.01, maxTokens: 1 });
    const res = await postWithApiKey(gw, "/v1/messages", messagesBody(1, "claude-priced"), r.a.key);
    expect(res.status).toBe(402);
    expect((await errorOf(res)).code).toBe("insufficient_balance");
    expect(gw.money(r.a.accountId).balance).toBe(0);
  });
});

describe("failed requests charge nothing", () => {
  const unchanged = (a: { accountId: number }, opening: number) => {
    const m = gw.money(a.accountId);
    expect(m).toEqual({ balance: opening, reserved: 0, ledgerSum: opening, openHolds: 0 });
    expect(ledgerRows(gw, a.accountId).filter((r) => r.kind === "charge")).toEqual([]);
  };

  it("answers an upstream 500 with 502 upstream_unavailable and leaves the balance as it was", async () => {
    const a = await gw.account(1);
    up.script({ kind: "error", status: 500 });
    const res = await postWithApiKey(gw, "/v1/messages", messagesBody(100, "claude-priced"), a.key);
    expect(res.status).toBe(502);
    expect((await errorOf(res)).code).toBe("upstream_unavailable");
    unchanged(a, 1e9);
  });

  it("charges nothing for a stream the upstream breaks before it completes", async () => {
    const a = await gw.account(1);
    up.script({ kind: "fail_mid_stream", afterEvents: 4, mode: "drop" });
    const res = await postWithApiKey(gw, "/v1/messages", { ...messagesBody(100, "claude-priced"), stream: true }, a.key);
    expect(res.status).toBe(200);
    await res.text();
    unchanged(a, 1e9);
  });

  it("reserves nothing for an unknown model (404 model_not_found)", async () => {
    const a = await gw.account(1);
    const res = await postWithApiKey(gw, "/v1/messages", messagesBody(100, "no-such-model"), a.key);
    expect(res.status).toBe(404);
    unchanged(a, 1e9);
  });

  it("reserves nothing for an invalid body (400 invalid_request)", async () => {
    const a = await gw.account(1);
    const res = await postWithApiKey(gw, "/v1/messages", { model: "claude-priced", messages: [] }, a.key);
    expect(res.status).toBe(400);
    unchanged(a, 1e9);
  });
});
