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
beforeAll(async () => {
  redis = await startTestRedis();
  one = await startTestGateway({ limits: { store: redis.url } });
  two = await startTestGateway({ limits: { store: redis.url } });
});
afterAll(async () => {
  await one?.stop();
  await two?.stop();
  await redis?.stop();
});

/** A key that both gateways know: the second database gets the first's key row under the same id. */
function sharedKey(opts: { rpm?: number } = {}): string {
  const a = one.account(1, opts);
  const b = two.account(1, opts);
  expect(b.keyId).toBe(a.keyId);
  const row = sqlGet<{ prefix: string; key_hash: string }>(one, "SELECT prefix, key_hash FROM api_keys WHERE id = ?", a.keyId);
  two.services.db.$client.query("UPDATE api_keys SET prefix = ?, key_hash = ? WHERE id = ?").run(row.prefix, row.key_hash, b.keyId);
  return a.key;
}

const chat = { model: "demo", max_tokens: 20, messages: [{ role: "user", content: "hi" }] };

describe("two gateways on one Redis", () => {
  it("serve a key 20 requests a minute between them, and refuse the 21st on either", async () => {
    const key = sharedKey();
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
    const key = sharedKey();
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => getWithKey(i % 2 ? two : one, "/v1/me", key)));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(20);
    expect(statuses.filter((s) => s === 429)).toHaveLength(20);
    await Promise.all(answers.map((r) => r.text()));
  });

  it("share count_tokens' own bucket of 60 the same way", async () => {
    const key = sharedKey();
    const body = { model: "demo", messages: [{ role: "user", content: "hi" }] };
    for (let i = 0; i < 60; i++) expect((await postWithApiKey(i % 2 ? two : one, "/v1/messages/count_tokens", body, key)).status).toBe(200);
    await expectError(await postWithApiKey(two, "/v1/messages/count_tokens", body, key), 429, "rate_limit");
    expect((await getWithKey(one, "/v1/me", key)).status).toBe(200);
  });
});
