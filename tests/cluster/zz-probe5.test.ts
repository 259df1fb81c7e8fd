import { afterAll, beforeAll, expect, it, setDefaultTimeout } from "bun:test";
import { SQL } from "bun";
import { startCluster, type TestCluster } from "../support/cluster.ts";
setDefaultTimeout(120_000);
let cluster: TestCluster; let db: SQL;
beforeAll(async () => {
  cluster = await startCluster({ instances: 2, extra: '\n[cluster]\nhold_timeout_s = 6\n' });
  db = new SQL(cluster.databaseUrl);
});
afterAll(async () => { await db?.close(); await cluster?.stop(); });
function ask(i: number, key: string, stream = false) {
  return fetch(`${cluster.instances[i]!.url}/v1/messages`, { method: "POST", headers: { "x-api-key": key, "content-type": "application/json", "anthropic-version": "2023-06-01" },
    body: JSON.stringify({ model: "claude-x", max_tokens: 100, stream, messages: [{ role: "user", content: "hi" }] }) });
}
it("sigterm mid-stream", async () => {
  const email = "d@test.local";
  await cluster.cliJson(["account", "create", "--email", email, "--balance", "5"]);
  const { key } = await cluster.cliJson<{ key: string }>(["key", "create", "--email", email]);
  cluster.up.setDefault({ kind: "slow_stream", events: 400, intervalMs: 50 });
  const streams = await Promise.all([0, 1, 2].map(() => ask(1, key, true)));
  const t = performance.now();
  cluster.instances[1]!.served.kill("SIGTERM");
  const texts = await Promise.all(streams.map((s) => s.text().catch((e) => "ERR " + e)));
  console.log("ended after", performance.now() - t, texts.map((x) => x.slice(-160)));
  console.log("exit", await cluster.instances[1]!.served.exited(20000));
  console.log("books", await db.unsafe("SELECT a.held_nano, a.balance_nano, (SELECT sum(amount_nano) FROM ledger_entries) s, (SELECT count(*) FROM ledger_entries WHERE kind='charge') c FROM accounts a"));
  console.log(await db.unsafe("SELECT * FROM instances"), await db.unsafe("SELECT count(*) FROM holds"));
  console.log(await db.unsafe("SELECT status, error_code, cost_nano FROM request_logs"));
});
