import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { getWithKey, postWithApiKey, sqlGet } from "../support/keyed.ts";
import { expectError } from "../support/errors.ts";
import { startTestRedis, type TestRedis } from "../support/redis-server.ts";

// Issue 18: "20 requests a minute means 20 across all instances". Two gateways, each with its own
// database, share one Redis; the same key (same id, same secret) is made in both databases, as one
// shared database would have it.

let redis: TestRedis;
let one: TestGateway;
let two: TestGateway;
// A second pair on the same store, with an account-wide limit of 5 a minute.
let oneA: TestGateway;
let twoA: TestGateway;
beforeAll(async () => {
  redis = await startTestRedis();
  one = await startTestGateway({ limits: { store: redis.url } });
  two = await startTestGateway({ limits: { store: redis.url } });
  oneA = await startTestGateway({ limits: { store: redis.url, account_rpm: 5 } });
  twoA = await startTestGateway({ limits: { store: redis.url, account_rpm: 5 } });
});
afterAll(async () => {
  for (const gw of [one, two, oneA, twoA]) await gw?.stop();
  await redis?.stop();
});

/** The second database gets the first's key row under the same id, as one shared database would have it. */
function copyKey(from: TestGateway, to: TestGateway, keyId: number): void {
  const row = sqlGet<{ prefix: string; key_hash: string }>(from, "SELECT prefix, key_hash FROM api_keys WHERE id = ?", keyId);
  to.services.db.$client.query("UPDATE api_keys SET prefix = ?, key_hash = ? WHERE id = ?").run(row.prefix, row.key_hash, keyId);
}

/** A key that both gateways know. */
async function sharedKey(opts: { rpm?: number } = {}): Promise<string> {
  const a = await one.account(1, opts);
  const b = await two.account(1, opts);
  expect(b.keyId).toBe(a.keyId);
  copyKey(one, two, a.keyId);
  return a.key;
}

/** An account with `n` keys that both gateways of the account-limited pair know, under the same ids. */
async function sharedAccountKeys(n: number): Promise<string[]> {
  const a = await oneA.account(1);
  const b = await twoA.account(1);
  expect(b.accountId).toBe(a.accountId);
  const keys = [a.key];
  copyKey(oneA, twoA, a.keyId);
  for (let i = 1; i < n; i++) {
    const k = await oneA.key(a.accountId);
    expect((await twoA.key(b.accountId)).keyId).toBe(k.keyId);
    copyKey(oneA, twoA, k.keyId);
    keys.push(k.key);
  }
  return keys;
}

const chat = { model: "demo", max_tokens: 20, messages: [{ role: "user", content: "hi" }] };

describe("two gateways on one Redis", () => {
  it("serve a key 20 requests a minute between them, and refuse the 21st on either", async () => {
    const key = await sharedKey();
    for (let i = 0; i < 20; i++) {
      const res = await getWithKey(i % 2 ? two : one, "/v1/me", key);
      expect(res.status).toBe(200);
      expect(res.headers.get("x-ratelimit-remaining-requests")).toBe(String(19 - i));
    }
    for (const gw of [one, two]) {
      const res = await postWithApiKey(gw, "/v1/chat/completions", chat, key);
      expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
      await expectError(res, 429, "rate_limit");
    }
  });

  it("let exactly 20 of 40 concurrent requests through, whichever gateway each reaches", async () => {
    const key = await sharedKey();
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => getWithKey(i % 2 ? two : one, "/v1/me", key)));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(20);
    expect(statuses.filter((s) => s === 429)).toHaveLength(20);
    await Promise.all(answers.map((r) => r.text()));
  });

  it("share count_tokens' own bucket of 60 the same way", async () => {
    const key = await sharedKey();
    const body = { model: "demo", messages: [{ role: "user", content: "hi" }] };
    for (let i = 0; i < 60; i++) expect((await postWithApiKey(i % 2 ? two : one, "/v1/messages/count_tokens", body, key)).status).toBe(200);
    await expectError(await postWithApiKey(two, "/v1/messages/count_tokens", body, key), 429, "rate_limit");
    expect((await getWithKey(one, "/v1/me", key)).status).toBe(200);
  });
});

describe("two gateways on one Redis with [limits] account_rpm", () => {
  // The buckets are named by key and account ids, which this pair's databases number from 1 again.
  beforeAll(() => redis.send("FLUSHALL"));

  it("serve an account 5 requests a minute across its keys and both gateways, and refuse the 6th on either", async () => {
    const keys = await sharedAccountKeys(3);
    for (let i = 0; i < 5; i++) {
      const res = await getWithKey(i % 2 ? twoA : oneA, "/v1/me", keys[i % 3]!);
      expect(res.status).toBe(200);
      expect(res.headers.get("x-ratelimit-remaining-requests")).toBe(String(4 - i));
    }
    for (const gw of [oneA, twoA]) {
      const res = await getWithKey(gw, "/v1/me", keys[2]!);
      expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
      const err = await expectError(res, 429, "rate_limit");
      expect(err.message).toContain("this account");
    }
  });

  it("let exactly 5 of 24 concurrent requests of one account through, whichever gateway and key each uses", async () => {
    const keys = await sharedAccountKeys(3);
    const answers = await Promise.all(Array.from({ length: 24 }, (_, i) => getWithKey(i % 2 ? twoA : oneA, "/v1/me", keys[i % 3]!)));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(19);
    await Promise.all(answers.map((r) => r.text()));
  });
});
