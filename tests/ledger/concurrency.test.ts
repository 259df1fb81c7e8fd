import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { startGatewayOnMock, type TestGateway } from "../support/gateway.ts";
import { estimateOf, ledgerRows, messagesBody, postWithApiKey, sqlGet } from "../support/keyed.ts";
import { errorOf } from "../support/errors.ts";
import type { MockUpstream } from "../support/mock-upstream.ts";
import { lastStreamCost, usdToNanoShown } from "../support/prices.ts";

// The upstream reports exactly the tokens the gateway reserves for (the byte estimate in, max_tokens
// out), so every request costs its reservation and how many fit is known in advance: no timing luck.
const MAX_TOKENS = 100;
// "true" is one byte shorter than "false": the streamed prompt makes up for it, so both reserve the same.
const PLAIN = { ...messagesBody(MAX_TOKENS, "fixed", "hi"), stream: false };
const STREAMED = { ...messagesBody(MAX_TOKENS, "fixed", "hi!"), stream: true };
const EST = estimateOf(PLAIN);
if (estimateOf(STREAMED) !== EST) throw new Error("the two bodies must reserve the same amount");
const COST = EST * 3_000 + MAX_TOKENS * 15_000; // $3/M in, $15/M out, in nano-dollars per token

let up: MockUpstream;
let gw: TestGateway;
let stop: () => Promise<void>;
beforeAll(async () => {
  ({ up, gw, stop } = await startGatewayOnMock({
    models: [
      { id: "fixed", modalities: ["text"], endpoints: ["messages"], pricing: { input: 3, output: 15 }, routes: [{ provider: "anthropic", model: "fixed-upstream" }] },
    ],
  }));
  up.setDefault({ kind: "text", text: "ok", usage: { input: EST, output: MAX_TOKENS, cacheRead: 0, cacheWrite: 0 } });
});
afterAll(() => stop());

interface Outcome {
  status: number;
  requestId: string;
  costNano: number | null;
  code: string | null;
  shouldRetry: string | null;
}

/** One request, streamed or not, reduced to what the ledger must agree with. */
async function run(key: string, stream: boolean): Promise<Outcome> {
  const res = await postWithApiKey(gw, "/v1/messages", stream ? STREAMED : PLAIN, key);
  const requestId = res.headers.get("x-gateway-request-id")!;
  const shouldRetry = res.headers.get("x-should-retry");
  if (res.status !== 200) return { status: res.status, requestId, costNano: null, code: (await errorOf(res)).code, shouldRetry };
  const text = await res.text();
  const shown = lastStreamCost(text);
  return { status: 200, requestId, costNano: shown === null ? null : usdToNanoShown(shown), code: null, shouldRetry };
}

/** 200 requests at once, spread over the keys, every other one streamed. */
const burst = (keys: string[], n = 200) => Promise.all(Array.from({ length: n }, (_, i) => run(keys[i % keys.length]!, i % 2 === 1)));

describe("200 parallel requests against a balance that covers 100 of them", () => {
  let acct: { accountId: number };
  let results: Outcome[];
  let opening: number;
  beforeAll(async () => {
    opening = 100 * COST + Math.floor(COST / 2);
    const a = gw.account((opening / 1e9).toFixed(9), { rpm: 100_000 });
    acct = a;
    const keys = [a.key, gw.key(a.accountId, { rpm: 100_000 }).key, gw.key(a.accountId, { rpm: 100_000 }).key, gw.key(a.accountId, { rpm: 100_000 }).key];
    results = await burst(keys);
  });

  it("serves exactly as many as the balance covers and refuses the rest with 402 insufficient_balance", () => {
    expect(results.filter((r) => r.status === 200)).toHaveLength(100);
    const refused = results.filter((r) => r.status !== 200);
    expect(refused).toHaveLength(100);
    for (const r of refused) expect([r.status, r.code]).toEqual([402, "insufficient_balance"]);
  });

  it("reports the charged cost_usd on every served request", () => {
    for (const r of results.filter((x) => x.status === 200)) expect(r.costNano).toBe(COST);
  });

  it("writes one charge row per served request and none for a refused one", () => {
    const charges = ledgerRows(gw, acct.accountId).filter((r) => r.kind === "charge");
    expect(charges).toHaveLength(100);
    for (const c of charges) expect([c.amount_nano, c.shortfall_nano]).toEqual([-COST, 0]);
    const served = new Set(results.filter((r) => r.status === 200).map((r) => r.requestId));
    expect(new Set(charges.map((c) => c.request_id))).toEqual(served);
  });

  it("leaves balance = SUM(ledger rows), never negative, with no open reservation", () => {
    const m = gw.money(acct.accountId);
    expect(m.balance).toBe(opening - 100 * COST);
    expect(m.balance).toBeGreaterThanOrEqual(0);
    expect(m.ledgerSum).toBe(m.balance);
    expect([m.reserved, m.openHolds]).toEqual([0, 0]);
  });

  it("spreads the charges over the keys exactly as the ledger rows say", () => {
    const perKey = sqlGet<{ spent: number; rows: number }>(
      gw,
      "SELECT (SELECT sum(spent_nano) FROM api_keys WHERE account_id = ?1) AS spent, (SELECT -sum(amount_nano) FROM ledger_entries WHERE account_id = ?1 AND kind = 'charge') AS rows",
      acct.accountId,
    );
    expect(perKey.spent).toBe(100 * COST);
    expect(perKey.rows).toBe(100 * COST);
  });
});

describe("200 parallel requests against key quotas that cover 25 each", () => {
  let acct: { accountId: number };
  let keyIds: number[];
  let results: Outcome[];
  beforeAll(async () => {
    const quotaNano = 25 * COST + Math.floor(COST / 2);
    const a = gw.account(100, { rpm: 100_000, quotaNano });
    const b = gw.key(a.accountId, { rpm: 100_000, quotaNano });
    acct = a;
    keyIds = [a.keyId, b.keyId];
    // 100 per key; the account's 100 USD covers them all, so only the quotas refuse.
    results = await burst([a.key, b.key]);
  });

  it("serves 25 per key and refuses the rest with 429 quota and x-should-retry: false", () => {
    expect(results.filter((r) => r.status === 200)).toHaveLength(50);
    const refused = results.filter((r) => r.status !== 200);
    expect(refused).toHaveLength(150);
    for (const r of refused) expect([r.status, r.code, r.shouldRetry]).toEqual([429, "quota", "false"]);
  });

  it("never lets a key spend past its quota, and its spend equals its ledger rows", () => {
    for (const id of keyIds) {
      const k = sqlGet<{ spent_nano: number; quota_nano: number }>(gw, "SELECT spent_nano, quota_nano FROM api_keys WHERE id = ?", id);
      expect(k.spent_nano).toBe(25 * COST);
      expect(k.spent_nano).toBeLessThanOrEqual(k.quota_nano);
      expect(gw.services.ledger.holds.key(id)).toBe(0);
      const rows = ledgerRows(gw, acct.accountId).filter((r) => r.key_id === id);
      expect(rows).toHaveLength(25);
      expect(-rows.reduce((s, r) => s + r.amount_nano, 0)).toBe(k.spent_nano);
    }
  });

  it("leaves the account's balance = SUM(ledger rows) with no open reservation", () => {
    const m = gw.money(acct.accountId);
    expect(m.balance).toBe(100e9 - 50 * COST);
    expect(m.ledgerSum).toBe(m.balance);
    expect([m.reserved, m.openHolds]).toEqual([0, 0]);
  });
});
