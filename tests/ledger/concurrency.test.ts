import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { FIXED_MODEL, GATEWAY_ENGINES, type EngineGateway } from "../support/engine-gateway.ts";
import { stopEngines } from "../support/engines.ts";
import { estimateOf, messagesBody, postWithApiKey } from "../support/keyed.ts";
import { errorOf } from "../support/errors.ts";
import { lastStreamCost, usdToNanoShown } from "../support/prices.ts";

// This file's PostgreSQL server (support/engines.ts), after the gateways' own afterAll.
afterAll(stopEngines);

// The same behaviours on both databases: SQLite (holds in the serving process) and PostgreSQL
// (a reserve is one conditional UPDATE on the shared balance, holds are rows).
setDefaultTimeout(60_000);

// The upstream reports exactly the tokens the gateway reserves for (the byte estimate in, max_tokens
// out), so every request costs its reservation and how many fit is known in advance: no timing luck.
const MAX_TOKENS = 100;
// "true" is one byte shorter than "false": the streamed prompt makes up for it, so both reserve the same.
const PLAIN = { ...messagesBody(MAX_TOKENS, "fixed", "hi"), stream: false };
const STREAMED = { ...messagesBody(MAX_TOKENS, "fixed", "hi!"), stream: true };
const EST = estimateOf(PLAIN);
if (estimateOf(STREAMED) !== EST) throw new Error("the two bodies must reserve the same amount");
const COST = EST * 3_000 + MAX_TOKENS * 15_000; // $3/M in, $15/M out, in nano-dollars per token

interface Outcome {
  status: number;
  requestId: string;
  costNano: number | null;
  code: string | null;
  shouldRetry: string | null;
}

/** One request, streamed or not, reduced to what the ledger must agree with. */
async function run(gw: EngineGateway, key: string, stream: boolean): Promise<Outcome> {
  const res = await postWithApiKey(gw, "/v1/messages", stream ? STREAMED : PLAIN, key);
  const requestId = res.headers.get("x-gateway-request-id")!;
  const shouldRetry = res.headers.get("x-should-retry");
  if (res.status !== 200) return { status: res.status, requestId, costNano: null, code: (await errorOf(res)).code, shouldRetry };
  const text = await res.text();
  const shown = lastStreamCost(text);
  return { status: 200, requestId, costNano: shown === null ? null : usdToNanoShown(shown), code: null, shouldRetry };
}

/** 200 requests at once, spread over the keys, every other one streamed. */
const burst = (gw: EngineGateway, keys: string[], n = 200) =>
  Promise.all(Array.from({ length: n }, (_, i) => run(gw, keys[i % keys.length]!, i % 2 === 1)));

for (const engine of GATEWAY_ENGINES) {
  describe(`on ${engine.name}`, () => {
    let gw: EngineGateway;
    let stop: () => Promise<void>;
    beforeAll(async () => {
      const started = await engine.start({
        models: [FIXED_MODEL],
      });
      ({ gw, stop } = started);
      started.up.setDefault({ kind: "text", text: "ok", usage: { input: EST, output: MAX_TOKENS, cacheRead: 0, cacheWrite: 0 } });
    });
    // Before the file's afterAll, which stops the PostgreSQL server.
    afterAll(() => stop?.());

    describe("200 parallel requests against a balance that covers 100 of them", () => {
      let acct: { accountId: number };
      let results: Outcome[];
      let opening: number;
      beforeAll(async () => {
        opening = 100 * COST + Math.floor(COST / 2);
        const a = await gw.account((opening / 1e9).toFixed(9), { rpm: 100_000 });
        acct = a;
        const more = await Promise.all([1, 2, 3].map(() => gw.key(a.accountId, { rpm: 100_000 })));
        results = await burst(gw, [a.key, ...more.map((k) => k.key)]);
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

      it("writes one charge row per served request and none for a refused one", async () => {
        const charges = (await gw.ledgerRows(acct.accountId)).filter((r) => r.kind === "charge");
        expect(charges).toHaveLength(100);
        for (const c of charges) expect([c.amount_nano, c.shortfall_nano]).toEqual([-COST, 0]);
        const served = new Set(results.filter((r) => r.status === 200).map((r) => r.requestId));
        expect(new Set(charges.map((c) => c.request_id))).toEqual(served);
      });

      it("leaves balance = SUM(ledger rows), never negative, with no open reservation", async () => {
        const m = await gw.money(acct.accountId);
        expect(m.balance).toBe(opening - 100 * COST);
        expect(m.balance).toBeGreaterThanOrEqual(0);
        expect(m.ledgerSum).toBe(m.balance);
        expect([m.reserved, m.openHolds]).toEqual([0, 0]);
      });

      it("spreads the charges over the keys exactly as the ledger rows say", async () => {
        const perKey = await gw.numbers(
          "SELECT (SELECT sum(spent_nano) FROM api_keys WHERE account_id = $1) AS spent, (SELECT -sum(amount_nano) FROM ledger_entries WHERE account_id = $1 AND kind = 'charge') AS rows",
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
        const a = await gw.account(100, { rpm: 100_000, quotaNano });
        const b = await gw.key(a.accountId, { rpm: 100_000, quotaNano });
        acct = a;
        keyIds = [a.keyId, b.keyId];
        // 100 per key; the account's 100 USD covers them all, so only the quotas refuse.
        results = await burst(gw, [a.key, b.key]);
      });

      it("serves 25 per key and refuses the rest with 429 quota and x-should-retry: false", () => {
        expect(results.filter((r) => r.status === 200)).toHaveLength(50);
        const refused = results.filter((r) => r.status !== 200);
        expect(refused).toHaveLength(150);
        for (const r of refused) expect([r.status, r.code, r.shouldRetry]).toEqual([429, "quota", "false"]);
      });

      it("never lets a key spend past its quota, and its spend equals its ledger rows", async () => {
        for (const id of keyIds) {
          const k = await gw.keyBooks(id);
          expect(k.spent).toBe(25 * COST);
          expect(k.spent).toBeLessThanOrEqual(k.quota!);
          expect(k.held).toBe(0);
          const rows = (await gw.ledgerRows(acct.accountId)).filter((r) => r.key_id === id);
          expect(rows).toHaveLength(25);
          expect(-rows.reduce((s, r) => s + r.amount_nano, 0)).toBe(k.spent);
        }
      });

      it("leaves the account's balance = SUM(ledger rows) with no open reservation", async () => {
        const m = await gw.money(acct.accountId);
        expect(m.balance).toBe(100e9 - 50 * COST);
        expect(m.ledgerSum).toBe(m.balance);
        expect([m.reserved, m.openHolds]).toEqual([0, 0]);
      });
    });
  });
}
