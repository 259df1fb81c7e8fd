// An instance's copies of keys are dropped on PostgreSQL's change notices (docs/database.md#what-each-instance-keeps-in-memory-and-how-long-it-may-be-stale).
// Here the listening connection is lost and cannot come back while the pool's connections keep
// working: the instance must not serve a revoked key from its copy for as long as that lasts.
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { SQL } from "bun";
import { startCluster, type TestCluster } from "../support/cluster.ts";

setDefaultTimeout(120_000);

let cluster: TestCluster;
let db: SQL;
let admin: SQL;
let name: string;

beforeAll(async () => {
  cluster = await startCluster({ instances: 1 });
  cluster.up.setDefault({ kind: "text", text: "ok" });
  name = new URL(cluster.databaseUrl).pathname.slice(1);
  // Opened now: once the database refuses new connections, these two still work.
  db = new SQL(cluster.databaseUrl, { max: 1 });
  admin = new SQL(cluster.pg.url, { max: 1 });
  await Promise.all([db`SELECT 1`, admin`SELECT 1`]);
});

afterAll(async () => {
  await admin?.unsafe(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS true`).catch(() => {});
  await db?.close();
  await admin?.close();
  await cluster?.stop();
});

async function ask(key: string): Promise<number> {
  const res = await fetch(`${cluster.instances[0]!.url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json", "anthropic-version": "2023-06-01" },
    body: JSON.stringify({ model: "claude-x", max_tokens: 100, messages: [{ role: "user", content: "hi" }] }),
  });
  await res.arrayBuffer();
  return res.status;
}

describe("an instance whose listening connection is lost and cannot reconnect", () => {
  it("stops serving a key revoked meanwhile within seconds, instead of from its copy until the reconnect", async () => {
    await cluster.cliJson(["account", "create", "--email", "stale@test.local", "--balance", "5"]);
    const { key, id } = await cluster.cliJson<{ key: string; id: number }>(["key", "create", "--email", "stale@test.local"]);
    // The pool's connections opened (and the key copied) before the database refuses new ones.
    for (let i = 0; i < 8; i++) expect(await ask(key)).toBe(200);
    await admin.unsafe(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS false`);
    try {
      await admin.unsafe(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${name}' AND query ILIKE 'LISTEN%'`);
      await db`UPDATE api_keys SET revoked_at = ${Date.now()} WHERE id = ${id}`;
      const start = performance.now();
      let status = await ask(key);
      while (status === 200 && performance.now() - start < 15_000) {
        await Bun.sleep(100);
        status = await ask(key);
      }
      expect(status).toBe(403);
      // Detection (2.5 s of silence) then a copy at most a second old; generous for a loaded machine.
      expect(performance.now() - start).toBeLessThan(8_000);
    } finally {
      await admin.unsafe(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS true`);
    }
  });
});
