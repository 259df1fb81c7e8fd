import { afterAll, beforeAll, expect, it, setDefaultTimeout } from "bun:test";
import { startCluster, type TestCluster } from "../support/cluster.ts";
setDefaultTimeout(120_000);
let cluster: TestCluster;
beforeAll(async () => { cluster = await startCluster({ instances: 1 }); cluster.up.setDefault({ kind: "text", text: "ok" }); });
afterAll(async () => { await cluster?.stop(); });
function ask(key: string) {
  return fetch(`${cluster.instances[0]!.url}/v1/messages`, { method: "POST", headers: { "x-api-key": key, "content-type": "application/json", "anthropic-version": "2023-06-01" },
    body: JSON.stringify({ model: "claude-x", max_tokens: 100, messages: [{ role: "user", content: "hi" }] }) });
}
it("redis replica", async () => {
  await cluster.cliJson(["account", "create", "--email", "r@t.local", "--balance", "5"]);
  const { key } = await cluster.cliJson<{ key: string }>(["key", "create", "--email", "r@t.local"]);
  console.log("before", (await ask(key)).status);
  console.log(await cluster.redis.send("REPLICAOF", "127.0.0.1", "1"));
  await Bun.sleep(200);
  const r = await ask(key); console.log("replica req", r.status, (await r.text()).slice(0, 200));
  const z = await fetch(cluster.instances[0]!.url + "/readyz"); console.log("replica readyz", z.status, await z.text());
  console.log(await cluster.redis.send("REPLICAOF", "NO", "ONE"));
  await cluster.redis.send("CONFIG", "SET", "maxmemory", "1");
  await cluster.redis.send("CONFIG", "SET", "maxmemory-policy", "noeviction");
  const r2 = await ask(key); console.log("oom req", r2.status, (await r2.text()).slice(0, 200));
  const z2 = await fetch(cluster.instances[0]!.url + "/readyz"); console.log("oom readyz", z2.status, await z2.text());
  await cluster.redis.send("CONFIG", "SET", "maxmemory", "0");
});
