import { afterAll, beforeAll, expect, it, setDefaultTimeout } from "bun:test";
import { SQL } from "bun";
import { startCluster, type TestCluster } from "../support/cluster.ts";
setDefaultTimeout(120_000);
let cluster: TestCluster; let db: SQL;
beforeAll(async () => {
  cluster = await startCluster({ instances: 1 });
  db = new SQL(cluster.databaseUrl, { max: 1 });
  cluster.up.setDefault({ kind: "text", text: "ok" });
});
afterAll(async () => { await db?.close(); await cluster?.stop(); });
function ask(i: number, key: string) {
  return fetch(`${cluster.instances[i]!.url}/v1/messages`, { method: "POST", headers: { "x-api-key": key, "content-type": "application/json", "anthropic-version": "2023-06-01" },
    body: JSON.stringify({ model: "claude-x", max_tokens: 100, messages: [{ role: "user", content: "hi" }] }) });
}
it("listener down, revoke", async () => {
  await cluster.cliJson(["account", "create", "--email", "a@t.local", "--balance", "5"]);
  const { key, id } = await cluster.cliJson<{ key: string; id: number }>(["key", "create", "--email", "a@t.local"]);
  for (let n = 0; n < 20; n++) await (await ask(0, key)).text();  // warm pool
  const name = new URL(cluster.databaseUrl).pathname.slice(1);
  await db.unsafe("SELECT 1");
  const admin = new SQL(cluster.pg.url, { max: 1 });
  await admin.unsafe(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS false`);
  console.log(await db.unsafe("SELECT pid, state, query FROM pg_stat_activity WHERE datname = current_database()"));
  await db.unsafe("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query ILIKE 'LISTEN%'");
  await Bun.sleep(300);
  await db.unsafe(`UPDATE api_keys SET revoked_at = 1 WHERE id = ${id}`);
  for (const ms of [500, 2000, 5000]) { await Bun.sleep(ms); const r = await ask(0, key); console.log(ms, r.status, (await r.text()).slice(0, 120)); console.log("readyz", (await fetch(cluster.instances[0]!.url + "/readyz")).status); }
  console.log(cluster.instances[0]!.served.err.slice(-1500));
});
