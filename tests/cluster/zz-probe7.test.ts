import { afterAll, beforeAll, expect, it, setDefaultTimeout } from "bun:test";
import { SQL } from "bun";
import { startCluster, type TestCluster } from "../support/cluster.ts";
setDefaultTimeout(120_000);
let cluster: TestCluster; let db: SQL;
beforeAll(async () => {
  cluster = await startCluster({ instances: 2, extra: '\n[cluster]\nhold_timeout_s = 8\n' });
  db = new SQL(cluster.databaseUrl);
});
afterAll(async () => { await db?.close(); await cluster?.stop(); });
function ask(i: number, key: string, stream = false) {
  return fetch(`${cluster.instances[i]!.url}/v1/messages`, { method: "POST", headers: { "x-api-key": key, "content-type": "application/json", "anthropic-version": "2023-06-01" },
    body: JSON.stringify({ model: "claude-x", max_tokens: 100, stream, messages: [{ role: "user", content: "hi" }] }) });
}
it("sweep timing", async () => {
  await cluster.cliJson(["account", "create", "--email", "s@t.local", "--balance", "5"]);
  const { key } = await cluster.cliJson<{ key: string }>(["key", "create", "--email", "s@t.local"]);
  cluster.up.setDefault({ kind: "slow_stream", events: 400, intervalMs: 50 });
  const streams = await Promise.all([0, 1].map(() => ask(1, key, true)));
  const [hb] = await db.unsafe("SELECT (extract(epoch FROM clock_timestamp())*1000)::bigint - heartbeat_at AS ago FROM instances ORDER BY id DESC LIMIT 1");
  cluster.instances[1]!.served.kill("SIGKILL");
  const t = performance.now();
  for (;;) { const [r] = await db.unsafe("SELECT count(*)::int n FROM holds"); if (r.n === 0) break; await Bun.sleep(50); }
  console.log("released after kill ms", performance.now() - t, "last beat was", hb);
  console.log(cluster.instances[0]!.served.err.split("\n").filter((l) => l.includes("holds_released")));
  for (const s of streams) await s.body?.cancel().catch(() => {});
});
