import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import { FIXED_MODEL, GATEWAY_ENGINES, type EngineGateway } from "../support/engine-gateway.ts";
import { stopEngines } from "../support/engines.ts";
import { estimateOf, getWithKey, messagesBody, postWithApiKey } from "../support/keyed.ts";
import { errorOf, expectError } from "../support/errors.ts";
import { events, type BudgetReached } from "../../src/core/events.ts";

// A key's budget that resets (docs/api.md#budgets) on both databases, through the real server: the
// refusal and its Retry-After, the recovery at the UTC reset (the ledger's clock moved by the test),
// concurrent requests never spending past it, the post's cap, /v1/me and the budget_reached event.

afterAll(stopEngines);
setDefaultTimeout(60_000);

// The upstream reports exactly what the gateway reserves (as tests/ledger/concurrency.test.ts), so
// each request costs COST and how many fit a budget is known in advance.
const MAX_TOKENS = 100;
const BODY = messagesBody(MAX_TOKENS, "fixed", "hi");
const EST = estimateOf(BODY);
const COST = EST * 3_000 + MAX_TOKENS * 15_000;

// Thursday 26 November 2026, 15:00 UTC: the day resets in 9 hours, the week on Monday 30th, the month on 1 December.
const THURSDAY = Date.parse("2026-11-26T15:00:00Z");
const MIDNIGHT = Date.parse("2026-11-27T00:00:00Z");

interface MeBudget {
  limit_usd: number;
  period: string;
  spent_usd: number;
  reserved_usd: number;
  remaining_usd: number;
  resets_at: string;
  reached: boolean;
}
const meBudget = async (gw: EngineGateway, key: string): Promise<MeBudget | null> => {
  const res = await getWithKey(gw, "/v1/me", key);
  expect(res.status).toBe(200);
  return ((await res.json()) as { key: { budget: MeBudget | null } }).key.budget;
};

for (const engine of GATEWAY_ENGINES) {
  describe(`a key's budget on ${engine.name}`, () => {
    let gw: EngineGateway;
    let stop: () => Promise<void>;
    let now = THURSDAY;
    const reached: BudgetReached[] = [];
    let unlisten: () => void;
    let restoreEvents: () => void;
    beforeAll(async () => {
      const started = await engine.start({
        models: [FIXED_MODEL],
      });
      ({ gw, stop } = started);
      started.up.setDefault({ kind: "text", text: "ok", usage: { input: EST, output: MAX_TOKENS, cacheRead: 0, cacheWrite: 0 } });
      gw.services.ledger.clock.now = () => now;
      unlisten = events.onBudgetReached((b) => reached.push(b));
      restoreEvents = events.redirect(() => {});
    });
    afterAll(async () => {
      unlisten?.();
      restoreEvents?.();
      await stop?.();
    });

    describe("spent by two requests of the SDK", () => {
      let a: { key: string; keyId: number; accountId: number };
      let sdk: Anthropic;
      const call = () => sdk.messages.create({ model: "fixed", max_tokens: MAX_TOKENS, messages: [{ role: "user", content: "hi" }] });
      beforeAll(async () => {
        now = THURSDAY;
        a = await gw.account(10, { budget: { nano: 2 * COST, period: "day" } });
        sdk = new Anthropic({ baseURL: gw.url, apiKey: a.key, maxRetries: 0 });
        await call();
        await call();
      });

      it("refuses the next call with 429 quota, a message naming the daily budget and its reset, and no retry", async () => {
        const err = await call().then(
          () => null,
          (e: unknown) => e as InstanceType<typeof Anthropic.APIError>,
        );
        expect(err).toBeInstanceOf(Anthropic.APIError);
        expect(err!.status).toBe(429);
        expect(err!.message).toContain(`This key's daily budget of ${(2 * COST / 1e9).toString()}`);
        expect(err!.message).toContain("is spent; it resets at 2026-11-27T00:00:00Z");
        expect(err!.headers?.get("retry-after")).toBe(String(9 * 3600));
        expect(err!.headers?.get("x-should-retry")).toBe("false");
      });

      it("answers in the error shape, type insufficient_quota, code quota", async () => {
        const res = await postWithApiKey(gw, "/v1/messages", BODY, a.key);
        await expectError(res, 429, "quota", "insufficient_quota");
      });

      it("charges nothing and holds nothing for a refused call", async () => {
        const m = await gw.money(a.accountId);
        expect(m.balance).toBe(10e9 - 2 * COST);
        expect([m.ledgerSum, m.reserved, m.openHolds]).toEqual([m.balance, 0, 0]);
      });

      it("shows the budget in /v1/me: spent, nothing left, the reset, and reached", async () => {
        expect(await meBudget(gw, a.key)).toEqual({
          limit_usd: (2 * COST) / 1e9,
          period: "day",
          spent_usd: (2 * COST) / 1e9,
          reserved_usd: 0,
          remaining_usd: 0,
          resets_at: "2026-11-27T00:00:00.000Z",
          reached: true,
        });
      });

      it("tells budget_reached once in the period, however many calls are refused", () => {
        expect(reached.filter((r) => r.keyId === a.keyId)).toEqual([
          { accountId: a.accountId, keyId: a.keyId, budgetNano: 2 * COST, period: "day", resetsAt: MIDNIGHT },
        ]);
      });

      it("serves again at the UTC reset, with the new day's spend starting at 0", async () => {
        now = MIDNIGHT - 1;
        expect((await postWithApiKey(gw, "/v1/messages", BODY, a.key)).status).toBe(429);
        now = MIDNIGHT;
        const served = await call();
        expect(served.content[0]).toMatchObject({ type: "text", text: "ok" });
        const b = await meBudget(gw, a.key);
        expect(b).toMatchObject({ spent_usd: COST / 1e9, remaining_usd: COST / 1e9, resets_at: "2026-11-28T00:00:00.000Z", reached: false });
        expect((await gw.keyBooks(a.keyId)).spent).toBe(3 * COST);
      });
    });

    describe("100 parallel requests against a daily budget that covers 25", () => {
      let a: { key: string; keyId: number; accountId: number };
      let statuses: number[];
      beforeAll(async () => {
        now = THURSDAY;
        a = await gw.account(100, { rpm: 100_000, budget: { nano: 25 * COST + Math.floor(COST / 2), period: "day" } });
        const all = await Promise.all(Array.from({ length: 100 }, () => postWithApiKey(gw, "/v1/messages", BODY, a.key)));
        statuses = await Promise.all(all.map(async (r) => (r.status === 200 ? (await r.text(), 200) : (await errorOf(r)).code === "quota" ? 429 : r.status)));
      });

      it("serves exactly 25 and refuses 75 with 429 quota", () => {
        expect(statuses.filter((s) => s === 200)).toHaveLength(25);
        expect(statuses.filter((s) => s === 429)).toHaveLength(75);
      });

      it("counts exactly what the ledger charged in the period, within the budget, holding nothing", async () => {
        const k = await gw.numbers("SELECT period_spent_nano AS period, spent_nano AS spent, budget_nano AS budget FROM api_keys WHERE id = $1", a.keyId);
        expect(k.period).toBe(25 * COST);
        expect(k.spent).toBe(25 * COST);
        expect(k.period!).toBeLessThanOrEqual(k.budget!);
        expect((await gw.keyBooks(a.keyId)).held).toBe(0);
      });
    });

    describe("the post", () => {
      it("caps a charge at what the budget has left and records the rest as shortfall", async () => {
        now = THURSDAY;
        const a = await gw.account(10, { budget: { nano: 1_000, period: "week" } });
        const hold = await gw.services.ledger.reserve("gw_budget_cap", a.accountId, a.keyId, 600);
        const s = await hold.post(5_000);
        expect(s).toEqual({ chargedNano: 1_000, shortfallNano: 4_000 });
        const rows = (await gw.ledgerRows(a.accountId)).filter((r) => r.kind === "charge");
        expect(rows.map((r) => [r.amount_nano, r.shortfall_nano])).toEqual([[-1_000, 4_000]]);
      });

      it("counts a hold against the budget: a second reserve that would pass it with the first is refused", async () => {
        now = THURSDAY;
        const a = await gw.account(10, { budget: { nano: 1_000, period: "month" } });
        const first = await gw.services.ledger.reserve("gw_budget_h1", a.accountId, a.keyId, 700);
        const second = await Promise.resolve()
          .then(() => gw.services.ledger.reserve("gw_budget_h2", a.accountId, a.keyId, 400))
          .then(
            () => null,
            (e: { code: string; retryAfter: number; message: string }) => e,
          );
        expect(second?.code).toBe("quota");
        // Thursday 26 November 15:00 to 1 December 00:00 UTC: 4 days and 9 hours.
        expect(second?.retryAfter).toBe(4 * 86_400 + 9 * 3600);
        expect(second?.message).toContain("monthly budget of 0.000001 USD");
        expect(second?.message).toContain("it resets at 2026-12-01T00:00:00Z");
        first.void("test");
      });
    });

    describe("changed through the dashboard's owner", () => {
      it("ends the budget-reached notice when the budget is raised, keeping the period's spend", async () => {
        now = THURSDAY;
        const a = await gw.account(10, { budget: { nano: COST, period: "day" } });
        expect((await postWithApiKey(gw, "/v1/messages", BODY, a.key)).status).toBe(200);
        expect((await postWithApiKey(gw, "/v1/messages", BODY, a.key)).status).toBe(429);
        expect((await meBudget(gw, a.key))?.reached).toBe(true);
        await gw.services.keys.update(a.keyId, { budget: { nano: 3 * COST, period: "day" } });
        expect(await meBudget(gw, a.key)).toMatchObject({ reached: false, spent_usd: COST / 1e9, remaining_usd: (2 * COST) / 1e9 });
        expect((await postWithApiKey(gw, "/v1/messages", BODY, a.key)).status).toBe(200);
      });

      it("shows no budget in /v1/me for a key without one", async () => {
        const a = await gw.account(1);
        expect(await meBudget(gw, a.key)).toBeNull();
      });
    });
  });
}
