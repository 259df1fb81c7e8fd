import { afterAll, beforeAll, expect, it, setDefaultTimeout } from "bun:test";
import { SQL } from "bun";
import { startCluster, type TestCluster } from "../support/cluster.ts";
setDefaultTimeout(120_000);
let cluster: TestCluster; let db: SQL;
beforeAll(async () => {
  process.env.GW_ID = "dup";
  cluster = await startCluster({ instances: 1, extra: '\n[cluster]\ninstance_id = "${GW_ID}"\nhold_timeout_s = 6\n' });
  db = new SQL(cluster.databaseUrl);
});
afterAll(async () => { await db?.close(); await cluster?.stop(); });
function ask(i: number, key: string, stream = false) {
  return fetch(`${cluster.instances[i]!.url}/v1/messages`, { method: "POST", headers: { "x-api-key": key, "content-type": "application/json", "anthropic-version": "2023-06-01" },
    body: JSON.stringify({ model: "claude-x", max_tokens: 100, stream, messages: [{ role: "user", content: "hi" }] }) });
}
it("dup id", async () => {
  const email = "d@test.local";
  await cluster.cliJson(["account", "create", "--email", email, "--balance", "5"]);
  const { key } = await cluster.cliJson<{ key: string }>(["key", "create", "--email", email]);
  cluster.up.setDefault({ kind: "slow_stream", events: 60, intervalMs: 50 });
  const streams = await Promise.all([0, 1, 2].map(() => ask(0, key, true)));
  console.log("held before", await db.unsafe("SELECT held_nano, balance_nano FROM accounts"), await db.unsafe("SELECT count(*) FROM holds"));
  await cluster.startInstance("B");
  console.log("held after B start", await db.unsafe("SELECT held_nano, balance_nano FROM accounts"), await db.unsafe("SELECT count(*) FROM holds"));
  const texts = await Promise.all(streams.map((s) => s.text()));
  console.log("stream tails", texts.map((t) => t.slice(-200)));
  await Bun.sleep(1000);
  console.log("books", await db.unsafe("SELECT a.held_nano, a.balance_nano, (SELECT sum(amount_nano) FROM ledger_entries) s, (SELECT count(*) FROM ledger_entries WHERE kind='charge') c, (SELECT sum(shortfall_nano) FROM ledger_entries) sf FROM accounts a"));
  console.log("A err", cluster.instances[0]!.served.err.split("\n").filter(l => /fenc|resum|released|holds/.test(l)).slice(0, 10));
  console.log("B err", cluster.instances[1]!.served.err.split("\n").filter(l => /fenc|resum|released|holds/.test(l)).slice(0, 10));
});
