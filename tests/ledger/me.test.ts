import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { startGatewayOnMock, type TestGateway } from "../support/gateway.ts";
import { estimateOf, getWithKey, messagesBody, postWithApiKey } from "../support/keyed.ts";
import { errorOf } from "../support/errors.ts";
import type { MockUpstream } from "../support/mock-upstream.ts";

let up: MockUpstream;
let gw: TestGateway;
let stop: () => Promise<void>;
beforeAll(async () => {
  ({ up, gw, stop } = await startGatewayOnMock({
    limits: { default_rpm: 33, count_tokens_rpm: 44 },
    models: [{ id: "priced", modalities: ["text"], endpoints: ["messages"], pricing: { input: 3, output: 15 }, routes: [{ provider: "anthropic", model: "p" }] }],
  }));
});
afterAll(() => stop());

interface Me {
  key: { id: number; prefix: string; quota: { limit_usd: number | null; spent_usd: number; reserved_usd: number; remaining_usd: number | null } };
  balance: { balance_usd: number; reserved_usd: number; spendable_usd: number };
  limits: { rpm: number; count_tokens_rpm: number; account_rpm: number | null; max_body_bytes: number };
}
const me = async (key: string) => {
  const res = await getWithKey(gw, "/v1/me", key);
  expect(res.status).toBe(200);
  return (await res.json()) as Me;
};

// 1000 input tokens × $3/M + 2000 output tokens × $15/M = $0.003 + $0.030
const CHARGE = { input: 1000, output: 2000, cacheRead: 0, cacheWrite: 0 };

describe("GET /v1/me after known charges", () => {
  let a: { key: string; keyId: number; accountId: number };
  beforeAll(async () => {
    a = await gw.account(10, { quotaNano: 1_000_000_000, rpm: 77 });
    for (let i = 0; i < 2; i++) {
      up.script({ kind: "text", text: "ok", usage: CHARGE });
      expect((await postWithApiKey(gw, "/v1/messages", messagesBody(100, "priced"), a.key)).status).toBe(200);
    }
  });

  it("shows the key's quota: limit, spent, held and remaining", async () => {
    expect((await me(a.key)).key.quota).toEqual({ limit_usd: 1, spent_usd: 0.066, reserved_usd: 0, remaining_usd: 0.934 });
  });

  it("shows the account's balance, reserved and spendable", async () => {
    expect((await me(a.key)).balance).toEqual({ balance_usd: 9.934, reserved_usd: 0, spendable_usd: 9.934 });
  });

  it("shows the key's own rpm, the count_tokens rpm and the body limit", async () => {
    expect((await me(a.key)).limits).toEqual({ rpm: 77, count_tokens_rpm: 44, account_rpm: null, max_body_bytes: 20 * 1024 * 1024 });
  });

  it("names the key by id and visible prefix, never by the secret", async () => {
    const m = await me(a.key);
    expect(m.key.id).toBe(a.keyId);
    expect(a.key.startsWith(m.key.prefix)).toBe(true);
    expect(m.key.prefix.length).toBeLessThan(16);
    expect(JSON.stringify(m)).not.toContain(a.key);
  });

  it("counts a running request's reservation as held on the account and on the key", async () => {
    up.script({ kind: "slow_stream", events: 10, intervalMs: 50 });
    const body = messagesBody(1000, "priced");
    const hold = estimateOf(body) * 3_000 + 1000 * 15_000;
    const running = postWithApiKey(gw, "/v1/messages", body, a.key);
    while (gw.money(a.accountId).openHolds === 0) await Bun.sleep(5);
    const m = await me(a.key);
    expect(m.balance.reserved_usd).toBe(hold / 1e9);
    expect(m.balance.spendable_usd).toBe((9_934_000_000 - hold) / 1e9);
    expect(m.key.quota.reserved_usd).toBe(hold / 1e9);
    expect(m.key.quota.remaining_usd).toBe((934_000_000 - hold) / 1e9);
    await (await running).text();
  });
});

describe("GET /v1/me for a key without restrictions", () => {
  it("shows no quota limit or remaining, and the configured default rpm", async () => {
    const a = await gw.account(2);
    const m = await me(a.key);
    expect(m.key.quota).toEqual({ limit_usd: null, spent_usd: 0, reserved_usd: 0, remaining_usd: null });
    expect(m.balance).toEqual({ balance_usd: 2, reserved_usd: 0, spendable_usd: 2 });
    expect(m.limits.rpm).toBe(33);
  });

  it("requires a key (401 no-key)", async () => {
    const res = await getWithKey(gw, "/v1/me", null);
    expect(res.status).toBe(401);
    expect((await errorOf(res)).code).toBe("no-key");
  });

  // A charge is capped at what is left of the quota (issue 14 item 12), the rest recorded as shortfall.
  it("caps a charge that would pass the quota at the quota, and shows remaining quota as 0", async () => {
    const a = await gw.account(10, { quotaNano: 10_000_000 });
    up.script({ kind: "text", text: "ok", usage: { input: 0, output: 100_000, cacheRead: 0, cacheWrite: 0 } }); // $1.5 on a $0.01 quota
    expect((await postWithApiKey(gw, "/v1/messages", messagesBody(1, "priced"), a.key)).status).toBe(200);
    expect((await me(a.key)).key.quota).toMatchObject({ limit_usd: 0.01, spent_usd: 0.01, remaining_usd: 0 });
  });
});
