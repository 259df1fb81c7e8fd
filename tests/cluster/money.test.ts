// Three gateway instances on one PostgreSQL and one Redis (issue 18): requests spread over the
// instances by the test itself, the money checked in the database after each run.
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { SQL } from "bun";
import { startCluster, type TestCluster } from "../support/cluster.ts";

setDefaultTimeout(120_000);

let cluster: TestCluster;
let db: SQL;

beforeAll(async () => {
  cluster = await startCluster({ instances: 3 });
  db = new SQL(cluster.databaseUrl);
  // Long enough that hundreds of holds overlap; short enough for a suite.
  cluster.up.setDefault({ kind: "slow_stream", events: 4, intervalMs: 25 });
});

afterAll(async () => {
  await db?.close();
  await cluster?.stop();
});

let seq = 0;
const email = () => `cluster-${++seq}@test.local`;

async function account(usd: number): Promise<string> {
  const e = email();
  await cluster.cliJson(["account", "create", "--email", e, "--balance", String(usd)]);
  return e;
}

async function key(accountEmail: string, flags: string[] = []): Promise<string> {
  const created = await cluster.cliJson<{ key: string }>(["key", "create", "--email", accountEmail, ...flags]);
  return created.key;
}

const body = { model: "claude-x", max_tokens: 200, messages: [{ role: "user", content: "hi" }] };

function ask(instance: number, apiKey: string, extra: Record<string, string> = {}): Promise<Response> {
  return fetch(`${cluster.instances[instance % cluster.instances.length]!.url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": apiKey, "content-type": "application/json", "anthropic-version": "2023-06-01", ...extra },
    body: JSON.stringify(body),
  });
}

/** The dollars one request holds, from the refusal of an empty account. */
async function holdOfOneRequest(): Promise<number> {
  const k = await key(await account(0));
  const res = await ask(0, k);
  expect(res.status).toBe(402);
  const message = ((await res.json()) as { error: { message: string } }).error.message;
  return Number(/needs up to ([\d.]+) USD/.exec(message)![1]);
}

interface Books {
  balance: number;
  held: number;
  ledgerSum: number;
  holds: number;
}

async function books(accountEmail: string): Promise<Books> {
  const [r] = await db`SELECT a.balance_nano, a.held_nano,
      (SELECT coalesce(sum(amount_nano), 0) FROM ledger_entries e WHERE e.account_id = a.id) AS ledger_sum,
      (SELECT count(*) FROM holds h WHERE h.account_id = a.id) AS holds
    FROM accounts a WHERE a.email = ${accountEmail}`;
  return { balance: Number(r.balance_nano), held: Number(r.held_nano), ledgerSum: Number(r.ledger_sum), holds: Number(r.holds) };
}

describe("three instances spending one account", () => {
  it("300 concurrent paid requests on an account that covers 100 never overspend, and the books balance", async () => {
    const hold = await holdOfOneRequest();
    const owner = await account(0);
    // Whole cents above 100 holds: the CLI takes dollars with cents.
    const usd = Math.ceil(hold * 100 * 100) / 100;
    await cluster.cliJson(["account", "credit", "--email", owner, "--usd", usd.toFixed(2)]);
    const keys = await Promise.all([0, 1, 2, 3, 4].map(() => key(owner)));
    const answers = await Promise.all(Array.from({ length: 300 }, (_, i) => ask(i, keys[i % keys.length]!)));
    const statuses = answers.map((r) => r.status);
    await Promise.all(answers.map((r) => r.arrayBuffer()));
    const ok = statuses.filter((s) => s === 200).length;
    expect(statuses.filter((s) => s !== 200 && s !== 402)).toEqual([]);
    expect(ok).toBeGreaterThanOrEqual(100);
    const b = await books(owner);
    expect(b.balance).toBeGreaterThanOrEqual(0);
    expect(b.balance).toBe(b.ledgerSum);
    expect(b.held).toBe(0);
    expect(b.holds).toBe(0);
    const [charges] = await db`SELECT count(*)::int AS n FROM ledger_entries e JOIN accounts a ON a.id = e.account_id WHERE a.email = ${owner} AND e.kind = 'charge'`;
    expect(charges.n).toBe(ok);
  });

  it("a key's quota holds across instances: its spend never passes it", async () => {
    const hold = await holdOfOneRequest();
    const owner = await account(100);
    const quota = (Math.ceil(hold * 10 * 100) / 100).toFixed(2);
    const keys = await Promise.all([0, 1, 2].map(() => key(owner, ["--quota", quota])));
    const answers = await Promise.all(Array.from({ length: 90 }, (_, i) => ask(i, keys[i % 3]!)));
    const statuses = answers.map((r) => r.status);
    await Promise.all(answers.map((r) => r.arrayBuffer()));
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    const rows = await db`SELECT k.quota_nano, k.spent_nano, k.held_nano FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE a.email = ${owner}`;
    for (const r of rows) {
      expect(Number(r.spent_nano)).toBeLessThanOrEqual(Number(r.quota_nano));
      expect(Number(r.held_nano)).toBe(0);
    }
    const b = await books(owner);
    expect(b.balance).toBe(b.ledgerSum);
    expect(b.holds).toBe(0);
  });
});

describe("limits and replays across instances", () => {
  it("a key's 21st request in a minute is refused whichever instance it reaches", async () => {
    const k = await key(await account(5), ["--rpm", "20"]);
    cluster.up.setDefault({ kind: "text", text: "ok" });
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) statuses.push((await ask(i, k)).status);
    expect(statuses.every((s) => s === 200)).toBe(true);
    for (let i = 0; i < 3; i++) {
      const res = await ask(i, k);
      expect(res.status).toBe(429);
      expect(((await res.json()) as { error: { type: string } }).error.type).toBe("rate_limit");
    }
    cluster.up.setDefault({ kind: "slow_stream", events: 4, intervalMs: 25 });
  });

  it("an idempotent retry on another instance replays the first answer", async () => {
    const owner = await account(5);
    const k = await key(owner);
    const first = await ask(0, k, { "idempotency-key": "retry-1" });
    const again = await ask(1, k, { "idempotency-key": "retry-1" });
    expect(again.status).toBe(first.status);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await again.text()).toBe(await first.text());
    const [r] = await db`SELECT count(*)::int AS n FROM ledger_entries e JOIN accounts a ON a.id = e.account_id WHERE a.email = ${owner} AND e.kind = 'charge'`;
    expect(r.n).toBe(1);
  });

  it("the same key with another body on another instance is a conflict", async () => {
    const k = await key(await account(5));
    expect((await ask(0, k, { "idempotency-key": "conflict-1" })).status).toBe(200);
    const other = await fetch(`${cluster.instances[2]!.url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": k, "content-type": "application/json", "anthropic-version": "2023-06-01", "idempotency-key": "conflict-1" },
      body: JSON.stringify({ ...body, max_tokens: 201 }),
    });
    expect(other.status).toBe(409);
  });

  it("a duplicate sent to two instances at once runs upstream once", async () => {
    const owner = await account(5);
    const k = await key(owner);
    const before = cluster.up.hits["POST /v1/messages"] ?? 0;
    const [a, b] = await Promise.all([ask(0, k, { "idempotency-key": "dup-1" }), ask(1, k, { "idempotency-key": "dup-1" })]);
    const texts = await Promise.all([a.text(), b.text()]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(texts[0]).toBe(texts[1]);
    expect((cluster.up.hits["POST /v1/messages"] ?? 0) - before).toBe(1);
  });
});
