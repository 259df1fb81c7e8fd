import { afterAll, beforeAll, expect, it, setDefaultTimeout } from "bun:test";
import { SQL } from "bun";
import { startCluster, type TestCluster } from "../support/cluster.ts";
setDefaultTimeout(120_000);
let cluster: TestCluster; let db: SQL;
beforeAll(async () => {
  cluster = await startCluster({ instances: 3, extra: "\n[cluster]\nhold_timeout_s = 6\n" });
  // account_rpm must be in [limits]; the config already has [limits]: append via sed later
  db = new SQL(cluster.databaseUrl);
  cluster.up.setDefault({ kind: "text", text: "ok" });
});
afterAll(async () => { await db?.close(); await cluster?.stop(); });
let seq = 0;
async function funded(usd: number, extra: string[] = []) {
  const email = `p-${++seq}@test.local`;
  await cluster.cliJson(["account", "create", "--email", email, "--balance", String(usd)]);
  return cluster.cliJson<{ key: string; id: number }>(["key", "create", "--email", email, ...extra]);
}
function ask(i: number, key: string, path = "/v1/messages") {
  return fetch(`${cluster.instances[i]!.url}${path}`, { method: "POST", headers: { "x-api-key": key, "content-type": "application/json", "anthropic-version": "2023-06-01" },
    body: JSON.stringify({ model: "claude-x", max_tokens: 100, messages: [{ role: "user", content: "hi" }] }) });
}
it("count tokens rpm across", async () => {
  const { key } = await funded(5);
  const st = await Promise.all(Array.from({ length: 30 }, (_, n) => ask(n % 3, key, "/v1/messages/count_tokens").then(async r => { await r.text(); return r.status; })));
  console.log("count_tokens statuses", JSON.stringify(st.reduce((a: any, s) => (a[s] = (a[s] ?? 0) + 1, a), {})));
});
it("budget lowered on CLI applies everywhere", async () => {
  const { key, id } = await funded(5);
  for (const i of [0, 1, 2]) { const r = await ask(i, key); await r.text(); }
  const h = await cluster.cli(["key", "--help"]); console.log(h.stdout.slice(0, 1500));
});
it("error shapes of 503 rate_limit_unavailable on chat", async () => {
  const { key } = await funded(5);
  await cluster.redis.stop();
  for (const p of ["/v1/chat/completions", "/v1/responses", "/v1/messages/count_tokens", "/v1/me"]) {
    const r = p === "/v1/me" ? await fetch(`${cluster.instances[1]!.url}${p}`, { headers: { authorization: `Bearer ${key}` } }) : await ask(1, key, p);
    console.log(p, r.status, r.headers.get("retry-after"), r.headers.get("x-gateway-request-id"), (await r.text()).slice(0, 250));
  }
  console.log("limit rows", await db.unsafe("SELECT status, error_code, endpoint FROM request_logs ORDER BY id DESC LIMIT 4"));
  await cluster.redis.start();
});
it("second instance with same id", async () => {
  const { key } = await funded(5);
  console.log(await db.unsafe("SELECT * FROM instances"));
});
