import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { balanceGuard, hi } from "../support/http.ts";
import { getWithKey, postWithApiKey } from "../support/keyed.ts";
import { expectError } from "../support/errors.ts";

// `[limits] account_rpm`: one bucket for all of an account's keys, on every key route, beside each
// key's own. Without it, an account with many keys had as many buckets: 8 keys made 8 × 60
// count_tokens a minute. Here 5 a minute for the account, 20 for each key.

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ limits: { account_rpm: 5 } });
});
afterAll(() => gw.stop());

const chat = { model: "demo", max_tokens: 8, messages: hi };
const countBody = { model: "demo", messages: hi };

/** An account with three keys, each with the default 20 a minute. */
async function threeKeys() {
  const a = await gw.account(1);
  return { accountId: a.accountId, keys: [a.key, (await gw.key(a.accountId)).key, (await gw.key(a.accountId)).key] };
}

async function drain(res: Response): Promise<number> {
  await res.arrayBuffer();
  return res.status;
}

describe("[limits] account_rpm across an account's keys", () => {
  it("refuses the account's 6th request of a minute, on whichever key, with 429 rate_limit and Retry-After, charging nothing", async () => {
    const { accountId, keys } = await threeKeys();
    for (let i = 0; i < 5; i++) expect(await drain(await getWithKey(gw, "/v1/me", keys[i % 3]!))).toBe(200);
    const untouched = balanceGuard(gw, accountId);
    const res = await postWithApiKey(gw, "/v1/chat/completions", chat, keys[2]!);
    // 5 a minute: the next request comes back in 12 s.
    expect(res.headers.get("retry-after")).toBe("12");
    const err = await expectError(res, 429, "rate_limit");
    expect(err.message).toContain("5 requests per minute for all the keys of this account together");
    untouched();
  });

  it("counts count_tokens against the account's bucket too", async () => {
    const { keys } = await threeKeys();
    for (let i = 0; i < 5; i++) expect(await drain(await postWithApiKey(gw, "/v1/messages/count_tokens", countBody, keys[i % 3]!))).toBe(200);
    await expectError(await postWithApiKey(gw, "/v1/messages/count_tokens", countBody, keys[0]!), 429, "rate_limit");
    await expectError(await getWithKey(gw, "/v1/me", keys[1]!), 429, "rate_limit");
  });

  it("lets exactly 5 of 15 concurrent requests of one account through", async () => {
    const { keys } = await threeKeys();
    const statuses = await Promise.all(Array.from({ length: 15 }, (_, i) => getWithKey(gw, "/v1/me", keys[i % 3]!).then(drain)));
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(10);
  });

  it("leaves other accounts their own bucket", async () => {
    const { keys } = await threeKeys();
    for (let i = 0; i < 6; i++) await drain(await getWithKey(gw, "/v1/me", keys[i % 3]!));
    const other = await gw.account(1);
    expect(await drain(await getWithKey(gw, "/v1/me", other.key))).toBe(200);
  });

  it("puts the tighter bucket in the x-ratelimit headers: the account's 5, or a key's own lower rpm", async () => {
    const a = await gw.account(1);
    const res = await getWithKey(gw, "/v1/me", a.key);
    expect(res.headers.get("x-ratelimit-limit-requests")).toBe("5");
    expect(res.headers.get("x-ratelimit-remaining-requests")).toBe("4");
    const slow = await gw.key(a.accountId, { rpm: 2 });
    const res2 = await getWithKey(gw, "/v1/me", slow.key);
    expect(res2.headers.get("x-ratelimit-limit-requests")).toBe("2");
    expect(res2.headers.get("x-ratelimit-remaining-requests")).toBe("1");
  });
});

describe("GET /v1/me with [limits] account_rpm", () => {
  it("names the account's limit beside the key's", async () => {
    const a = await gw.account(1);
    const me = (await (await getWithKey(gw, "/v1/me", a.key)).json()) as { limits: Record<string, unknown> };
    expect(me.limits).toMatchObject({ rpm: 20, count_tokens_rpm: 60, account_rpm: 5 });
  });
});

describe("without [limits] account_rpm", () => {
  it("limits each key by its own bucket only: two keys of one account make 40 requests a minute", async () => {
    const plain = await startTestGateway();
    try {
      const a = await plain.account(1);
      const b = await plain.key(a.accountId);
      const statuses = await Promise.all(Array.from({ length: 40 }, (_, i) => getWithKey(plain, "/v1/me", i % 2 ? b.key : a.key).then(drain)));
      expect(statuses).toEqual(Array(40).fill(200));
    } finally {
      await plain.stop();
    }
  });
});
