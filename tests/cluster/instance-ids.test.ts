// `[cluster] instance_id` as operators set it (docs/scaling.md#the-config-lines): one config copied to
// every machine with a fixed id is the mistake this guards against.
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { SQL } from "bun";
import { startCluster, type TestCluster } from "../support/cluster.ts";
import { freePort, startServe } from "../support/cli.ts";

setDefaultTimeout(120_000);

let cluster: TestCluster;
let db: SQL;

beforeAll(async () => {
  // Every process started from this test shares the id, as a config copied with a fixed id would.
  process.env.GW_TEST_INSTANCE_ID = "gw-copied";
  cluster = await startCluster({ instances: 1, extra: '\n[cluster]\ninstance_id = "${GW_TEST_INSTANCE_ID}"\nhold_timeout_s = 6\n' });
  db = new SQL(cluster.databaseUrl);
});

afterAll(async () => {
  await db?.close();
  await cluster?.stop();
});

function stream(apiKey: string): Promise<Response> {
  return fetch(`${cluster.instances[0]!.url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": apiKey, "content-type": "application/json", "anthropic-version": "2023-06-01" },
    body: JSON.stringify({ model: "claude-x", max_tokens: 100, stream: true, messages: [{ role: "user", content: "hi" }] }),
  });
}

describe("a second instance started under the id of a running one", () => {
  it("is refused with one line naming the id, and the running one's holds stay held", async () => {
    await cluster.cliJson(["account", "create", "--email", "ids@test.local", "--balance", "5"]);
    const { key } = await cluster.cliJson<{ key: string }>(["key", "create", "--email", "ids@test.local"]);
    cluster.up.setDefault({ kind: "slow_stream", events: 400, intervalMs: 50 });
    const streams = await Promise.all([0, 1, 2].map(() => stream(key)));
    expect(streams.map((r) => r.status)).toEqual([200, 200, 200]);
    const second = startServe(["--port", String(freePort())], { env: { GATEWAY_CONFIG: cluster.config, BUN_CONFIG_MAX_HTTP_REQUESTS: "4096" } });
    try {
      const code = await second.exited(30_000);
      expect(code).toBeNumber();
      expect(code).not.toBe(0);
      expect(second.err.trim().split("\n")).toHaveLength(1);
      expect(second.err).toContain('instance_id "gw-copied"');
      const [held] = await db`SELECT count(*)::int AS n, (SELECT held_nano FROM accounts WHERE email = 'ids@test.local') AS nano FROM holds`;
      expect(held.n).toBe(3);
      expect(Number(held.nano)).toBeGreaterThan(0);
    } finally {
      second.kill("SIGKILL");
      for (const s of streams) await s.body?.cancel().catch(() => {});
      cluster.up.setDefault({ kind: "text", text: "ok" });
    }
  });
});

describe("two instances started at the same moment under one id", () => {
  it("exactly one serves; the other is refused with one line naming the id", async () => {
    const env = { GATEWAY_CONFIG: cluster.config, BUN_CONFIG_MAX_HTTP_REQUESTS: "4096", GW_TEST_INSTANCE_ID: "gw-twin" };
    const twins = [0, 1].map(() => startServe(["--port", String(freePort())], { env }));
    try {
      const outcomes = await Promise.all(twins.map((t) => t.url().then(() => "serves", () => "refused")));
      expect(outcomes.sort()).toEqual(["refused", "serves"]);
      const refused = twins.find((t) => t.proc.exitCode !== null)!;
      expect(refused.proc.exitCode).not.toBe(0);
      expect(refused.err.trim().split("\n")).toHaveLength(1);
      expect(refused.err).toContain('instance_id "gw-twin" is in use by a running instance');
    } finally {
      for (const t of twins) t.kill("SIGKILL");
      await Promise.all(twins.map((t) => t.exited(10_000)));
    }
  });
});
