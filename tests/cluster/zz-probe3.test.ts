import { afterAll, beforeAll, expect, it, setDefaultTimeout } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { startCluster, type TestCluster } from "../support/cluster.ts";
setDefaultTimeout(120_000);
let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startCluster({ instances: 3 });
  cluster.up.setDefault({ kind: "text", text: "ok" });
  const c = readFileSync(cluster.config, "utf8").replace("default_rpm = 100000", "default_rpm = 100000\ncount_tokens_rpm = 5\naccount_rpm = 7");
  writeFileSync(cluster.config, c);
  for (const i of cluster.instances) { const r = await cluster.cli(["reload", "--port", new URL(i.url).port]); console.log(r.code, r.stdout, r.stderr); }
});
afterAll(async () => { await cluster?.stop(); });
let seq = 0;
async function funded(usd: number, email = `p-${++seq}@test.local`) {
  await cluster.cliJson(["account", "create", "--email", email, "--balance", String(usd)]).catch(() => {});
  return cluster.cliJson<{ key: string; id: number }>(["key", "create", "--email", email]);
}
function ask(i: number, key: string, path = "/v1/messages") {
  return fetch(`${cluster.instances[i]!.url}${path}`, { method: "POST", headers: { "x-api-key": key, "content-type": "application/json", "anthropic-version": "2023-06-01" },
    body: JSON.stringify({ model: "claude-x", max_tokens: 100, messages: [{ role: "user", content: "hi" }] }) });
}
const tally = (st: number[]) => JSON.stringify(st.reduce((a: any, s) => (a[s] = (a[s] ?? 0) + 1, a), {}));
it("count tokens rpm across", async () => {
  const { key } = await funded(5);
  const st = await Promise.all(Array.from({ length: 30 }, (_, n) => ask(n % 3, key, "/v1/messages/count_tokens").then(async r => { await r.text(); return r.status; })));
  console.log("count_tokens statuses", tally(st));
});
it("account rpm across", async () => {
  const email = "acct@test.local";
  const keys = [await funded(50, email), await funded(50, email), await funded(50, email)];
  const st = await Promise.all(Array.from({ length: 30 }, (_, n) => ask(n % 3, keys[n % 3]!.key).then(async r => { await r.text(); return r.status; })));
  console.log("account statuses", tally(st));
});
