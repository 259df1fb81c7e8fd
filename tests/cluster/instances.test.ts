// Instances that die, and an operator's CLI that every instance obeys within a second (issue 18).
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { SQL } from "bun";
import { startCluster, type TestCluster } from "../support/cluster.ts";

setDefaultTimeout(120_000);

let cluster: TestCluster;
let db: SQL;

beforeAll(async () => {
  // A short timeout keeps the suite short; the default (30 s) is what the docs promise.
  cluster = await startCluster({ instances: 3, extra: "\n[cluster]\nhold_timeout_s = 6\n" });
  db = new SQL(cluster.databaseUrl);
});

afterAll(async () => {
  await db?.close();
  await cluster?.stop();
});

let seq = 0;

async function funded(usd: number): Promise<{ email: string; key: string; id: number }> {
  const email = `instances-${++seq}@test.local`;
  await cluster.cliJson(["account", "create", "--email", email, "--balance", String(usd)]);
  const { key, id } = await cluster.cliJson<{ key: string; id: number }>(["key", "create", "--email", email]);
  return { email, key, id };
}

function ask(instance: number, apiKey: string, stream = false): Promise<Response> {
  return fetch(`${cluster.instances[instance]!.url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": apiKey, "content-type": "application/json", "anthropic-version": "2023-06-01" },
    body: JSON.stringify({ model: "claude-x", max_tokens: 100, stream, messages: [{ role: "user", content: "hi" }] }),
  });
}

/** Polls every instance until `ok(status)` holds on all of them; the time it took, in ms. */
async function untilEveryInstance(apiKey: string, ok: (status: number) => boolean, limitMs: number): Promise<number> {
  const start = performance.now();
  for (;;) {
    const statuses = await Promise.all(cluster.instances.map(async (_, i) => {
      const res = await ask(i, apiKey);
      await res.arrayBuffer();
      return res.status;
    }));
    if (statuses.every(ok)) return performance.now() - start;
    if (performance.now() - start > limitMs) throw new Error(`after ${limitMs} ms the instances answer ${statuses.join(", ")}`);
    await Bun.sleep(20);
  }
}

describe("the operator's CLI on every instance", () => {
  beforeAll(() => cluster.up.setDefault({ kind: "text", text: "ok" }));

  it("a key revoked through the CLI is refused (403 inactive) by every instance within a second", async () => {
    const { key, id } = await funded(5);
    // Every instance has met the key (and keeps it) before the revoke.
    for (let i = 0; i < 3; i++) expect((await ask(i, key)).status).toBe(200);
    await cluster.cliJson(["key", "revoke", String(id)]);
    expect(await untilEveryInstance(key, (s) => s === 403, 1000)).toBeLessThan(1000);
  });

  it("a top-up through the CLI lets every instance serve an account refused a moment before", async () => {
    const { email, key } = await funded(0);
    for (let i = 0; i < 3; i++) expect((await ask(i, key)).status).toBe(402);
    await cluster.cliJson(["account", "credit", "--email", email, "--usd", "5"]);
    expect(await untilEveryInstance(key, (s) => s === 200, 1000)).toBeLessThan(1000);
  });

  it("a pause through the CLI stops every instance within a second, and a resume starts them again", async () => {
    const { key } = await funded(5);
    for (let i = 0; i < 3; i++) expect((await ask(i, key)).status).toBe(200);
    await cluster.cliJson(["pause"]);
    try {
      expect(await untilEveryInstance(key, (s) => s === 503, 1000)).toBeLessThan(1000);
    } finally {
      await cluster.cliJson(["resume"]);
    }
    expect(await untilEveryInstance(key, (s) => s === 200, 1000)).toBeLessThan(1000);
  });
});

describe("an instance killed with streams in flight", () => {
  it("its holds are released by the others, and nothing is charged twice", async () => {
    const { email, key } = await funded(5);
    cluster.up.setDefault({ kind: "slow_stream", events: 400, intervalMs: 50 });
    const victim = cluster.instances[2]!;
    const streams = await Promise.all([0, 1, 2, 3, 4].map(() => ask(2, key, true)));
    expect(streams.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    const [held] = await db`SELECT count(*)::int AS n FROM holds h JOIN accounts a ON a.id = h.account_id WHERE a.email = ${email}`;
    expect(held.n).toBe(5);
    victim.served.kill("SIGKILL");
    await victim.served.exited(10_000);
    for (const s of streams) await s.body?.cancel().catch(() => {});
    // Meanwhile the others keep serving the same account.
    cluster.up.setDefault({ kind: "text", text: "ok" });
    expect((await ask(0, key)).status).toBe(200);
    expect((await ask(1, key)).status).toBe(200);
    const start = performance.now();
    for (;;) {
      const [r] = await db`SELECT a.held_nano, (SELECT count(*)::int FROM holds h WHERE h.account_id = a.id) AS holds FROM accounts a WHERE a.email = ${email}`;
      if (r.holds === 0 && Number(r.held_nano) === 0) break;
      if (performance.now() - start > 30_000) throw new Error(`holds left after 30 s: ${r.holds}`);
      await Bun.sleep(250);
    }
    const [books] = await db`SELECT a.balance_nano, (SELECT sum(amount_nano) FROM ledger_entries e WHERE e.account_id = a.id) AS ledger_sum,
        (SELECT count(*)::int FROM ledger_entries e WHERE e.account_id = a.id AND e.kind = 'charge') AS charges
      FROM accounts a WHERE a.email = ${email}`;
    expect(Number(books.balance_nano)).toBe(Number(books.ledger_sum));
    // The two answered requests, once each; the killed streams were never charged.
    expect(books.charges).toBe(2);
  });
});
