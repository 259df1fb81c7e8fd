// A PostgreSQL outage under two instances (docs/database.md, "Heartbeats, fencing and the release
// of a silent instance's holds"): the server stopped for longer than [cluster] hold_timeout_s while
// both instances serve paid requests and streams, then started again on the same data and port.
// Nobody may take the other for dead over time both were cut off, a hold may not be relied upon
// after another instance may release it, and neither may answer 500.
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { SQL } from "bun";
import { startCluster, type TestCluster } from "../support/cluster.ts";

setDefaultTimeout(240_000);

const TIMEOUT_S = 5;
const USD = 1_000_000_000;

let cluster: TestCluster;
let db: SQL;

beforeAll(async () => {
  cluster = await startCluster({ instances: 2, extra: `\n[cluster]\nhold_timeout_s = ${TIMEOUT_S}\n` });
  db = new SQL({ url: cluster.databaseUrl, max: 2 });
  // An answer costing about 0.60 USD (40 000 output tokens at 15 USD a million) under a hold of
  // about 0.75 USD (max_tokens 50 000): an account of 1 USD covers one request at a time. A stream
  // runs 16 s, long enough to start before the outage and end after it; a plain answer comes at once.
  cluster.up.setDefault({ kind: "text", text: "tick ".repeat(32), chunks: 32, delayMs: 500, usage: { input: 10, output: 40_000 } });
}, 120_000);

afterAll(async () => {
  await db?.close();
  await cluster?.stop();
});

let seq = 0;
async function funded(usd: number): Promise<{ email: string; key: string }> {
  const email = `outage-${++seq}@test.local`;
  await cluster.cliJson(["account", "create", "--email", email, "--balance", String(usd)]);
  const { key } = await cluster.cliJson<{ key: string }>(["key", "create", "--email", email]);
  return { email, key };
}

function ask(instance: number, apiKey: string, stream: boolean, maxTokens = 50_000): Promise<Response> {
  return fetch(`${cluster.instances[instance]!.url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": apiKey, "content-type": "application/json", "anthropic-version": "2023-06-01" },
    body: JSON.stringify({ model: "claude-x", max_tokens: maxTokens, stream, messages: [{ role: "user", content: "hi" }] }),
  });
}

/** Requests one after another on one instance until `running()` is false; every answer's status. */
async function load(instance: number, apiKey: string, stream: boolean, running: () => boolean, statuses: number[]): Promise<void> {
  while (running()) {
    try {
      const res = await ask(instance, apiKey, stream);
      statuses.push(res.status);
      await res.arrayBuffer();
    } catch (e) {
      statuses.push(-1); // no answer at all: a dropped connection
      console.error(`outage load: ${(e as Error).message}`);
    }
    await Bun.sleep(statuses.at(-1) === 200 ? 50 : 200);
  }
}

describe("a PostgreSQL outage longer than hold_timeout_s under two instances", () => {
  it("answers no 500, overspends nothing, leaves no hold, and both instances serve again after the restart", async () => {
    // Tight accounts: one hold at a time, streams asked of both instances. Roomy ones: streams, and
    // plain requests one after another, so that paid traffic keeps coming throughout.
    const tight = await Promise.all(Array.from({ length: 6 }, () => funded(1)));
    const roomy = await Promise.all(Array.from({ length: 6 }, () => funded(1000)));
    let on = true;
    const running = () => on;
    const statuses: number[] = [];
    const loops = [
      ...tight.flatMap((a) => [0, 1].map((i) => load(i, a.key, true, running, statuses))),
      ...roomy.slice(0, 2).flatMap((a) => [0, 1].map((i) => load(i, a.key, true, running, statuses))),
      ...roomy.slice(2).flatMap((a) => [0, 1].map((i) => load(i, a.key, false, running, statuses))),
    ];

    await Bun.sleep(3_000);
    cluster.pg.halt();
    await Bun.sleep((TIMEOUT_S + 3) * 1000);
    cluster.pg.resume();
    await Bun.sleep(15_000);
    on = false;
    await Promise.all(loops);

    // Both instances serve again (a fresh account, cheap requests).
    const after = await funded(5);
    for (const i of [0, 1]) {
      const start = performance.now();
      for (;;) {
        const res = await ask(i, after.key, false, 100);
        await res.arrayBuffer();
        if (res.status === 200) break;
        expect(res.status).not.toBe(500);
        if (performance.now() - start > 20_000) throw new Error(`instance ${i} still answers ${res.status} 20 s after the restart`);
        await Bun.sleep(200);
      }
    }

    // Holds of ended requests whose release met the outage are released on the next beats.
    let holdsLeft = 0;
    for (const start = performance.now(); performance.now() - start < 20_000; await Bun.sleep(250)) {
      [{ n: holdsLeft }] = await db`SELECT count(*)::int AS n FROM holds`;
      if (holdsLeft === 0) break;
    }

    const counts = statuses.reduce<Record<number, number>>((m, s) => ((m[s] = (m[s] ?? 0) + 1), m), {});
    const [{ shortfall }] = await db`SELECT coalesce(sum(shortfall_nano), 0)::text AS shortfall FROM ledger_entries`;
    console.log(`outage: answers by status ${JSON.stringify(counts)}, shortfall ${Number(shortfall) / USD} USD, ${holdsLeft} hold(s) left`);
    expect(holdsLeft).toBe(0);
    expect(statuses.filter((s) => s >= 500 && s !== 503)).toEqual([]);
    expect(statuses.filter((s) => s === -1)).toEqual([]);
    expect(counts[200]).toBeGreaterThan(0);

    const accounts = await db`SELECT a.email, a.balance_nano, a.held_nano,
        (SELECT coalesce(sum(amount_nano), 0) FROM ledger_entries e WHERE e.account_id = a.id) AS ledger_sum,
        (SELECT coalesce(sum(shortfall_nano), 0) FROM ledger_entries e WHERE e.account_id = a.id) AS shortfall
      FROM accounts a WHERE a.email LIKE 'outage-%'`;
    for (const a of accounts) {
      expect({ email: a.email, balanceOk: Number(a.balance_nano) >= 0, books: Number(a.balance_nano) - Number(a.ledger_sum), held: Number(a.held_nano), shortfall: Number(a.shortfall) })
        .toEqual({ email: a.email, balanceOk: true, books: 0, held: 0, shortfall: 0 });
    }
    // A tight account paid at most what it had: one answer's 0.60 USD.
    for (const t of tight) {
      const [r] = await db`SELECT balance_nano FROM accounts WHERE email = ${t.email}`;
      expect(Number(r.balance_nano)).toBeGreaterThanOrEqual(0.4 * USD - 1_000_000);
    }
    const [inst] = await db`SELECT count(*)::int AS n FROM instances`;
    expect(inst.n).toBe(2);
    // Each fenced itself during the outage and resumed after it; neither took the other for dead.
    for (const i of cluster.instances) {
      const said = (event: string) => i.served.err.includes(`"event":"${event}"`);
      expect({ name: i.name, fenced: said("instance_fenced"), resumed: said("instance_resumed"), released: said("holds_released") })
        .toEqual({ name: i.name, fenced: true, resumed: true, released: false });
    }
  });
});
