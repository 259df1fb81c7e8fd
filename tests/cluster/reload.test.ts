// `gateway reload` with several instances on one PostgreSQL (docs/scaling.md#reloading-the-fleet):
// one command reaches every instance, each reads its own config file again and says how it went,
// on the command's output and in the admin status.
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { SQL } from "bun";
import { readFileSync, writeFileSync } from "node:fs";
import { body, Browser } from "../api/support.ts";
import { startCluster, type TestCluster } from "../support/cluster.ts";

setDefaultTimeout(120_000);

let cluster: TestCluster;
let db: SQL;
let original: string;
let key: string;

beforeAll(async () => {
  cluster = await startCluster({ instances: 2 });
  db = new SQL(cluster.databaseUrl);
  original = readFileSync(cluster.config, "utf8");
  await cluster.cliJson(["account", "create", "--email", "reload@test.local", "--balance", "5"]);
  ({ key } = await cluster.cliJson<{ key: string }>(["key", "create", "--email", "reload@test.local"]));
});

afterAll(async () => {
  await db?.close();
  await cluster?.stop();
});

/** The cluster's config with one more model, "claude-y", on the same route. */
const withModelY = () =>
  `${original}\n[[models]]\nid = "claude-y"\nmodalities = ["text"]\nendpoints = ["messages"]\npricing = { input = 3.0, output = 15.0 }\nroutes = [{ provider = "anthropic", model = "claude-x-1" }]\n`;

const ask = (url: string, model: string) =>
  fetch(`${url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json", "anthropic-version": "2023-06-01" },
    body: JSON.stringify({ model, max_tokens: 16, messages: [{ role: "user", content: "hi" }] }),
  });

const ids = async () => (await db`SELECT id FROM instances ORDER BY id`).map((r: { id: string }) => r.id) as string[];

describe("gateway reload on PostgreSQL", () => {
  it("reaches every instance: a model added to the file is served by both, and each names itself in a line", async () => {
    writeFileSync(cluster.config, withModelY());
    const r = await cluster.cli(["reload"]);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split("\n");
    expect(lines).toHaveLength(2);
    for (const [i, id] of (await ids()).entries()) expect(lines[i]).toStartWith(`${id}: reloaded ${cluster.config}: catalog `);
    for (const instance of cluster.instances) expect((await ask(instance.url, "claude-y")).status).toBe(200);
  });

  it("a file every instance refuses: each line gives the reason, exit 2, and both keep serving their running config", async () => {
    writeFileSync(cluster.config, withModelY().replace('kind = "anthropic"', 'kind = "anthropc"'));
    try {
      const r = await cluster.cli(["reload"]);
      expect(r.code).toBe(2);
      const lines = r.stdout.trim().split("\n");
      expect(lines).toHaveLength(2);
      for (const line of lines) expect(line).toContain(`reload refused, the running config is kept: ${cluster.config}: providers[0].kind`);
      expect(r.stderr).toContain("gateway: reload: 0 of 2 instance(s) reloaded; 2 refused, 0 did not answer");
      for (const instance of cluster.instances) expect((await ask(instance.url, "claude-y")).status).toBe(200);
    } finally {
      writeFileSync(cluster.config, withModelY());
    }
  });

  it("names an instance that does not answer within 10 s, and exits 2", async () => {
    // A row beating as an instance would, with no process listening behind it (as one whose listening connection is down).
    await db`INSERT INTO instances (id, heartbeat_at) VALUES ('gw-deaf', (extract(epoch FROM clock_timestamp()) * 1000)::bigint)`;
    try {
      const r = await cluster.cli(["reload"]);
      expect(r.code).toBe(2);
      expect(r.stdout).toContain("gw-deaf: no answer within 10 s (reload it on its machine: SIGHUP, or gateway reload --local)");
      expect(r.stderr).toContain("2 of 3 instance(s) reloaded; 0 refused, 1 did not answer");
    } finally {
      await db`DELETE FROM instances WHERE id = 'gw-deaf'`;
    }
  });

  it("--local asks only the server on this machine, and names its instance", async () => {
    const port = new URL(cluster.instances[0]!.url).port;
    const r = await cluster.cli(["reload", "--local", "--port", port]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^reloaded instance \S+: /);
  });

  it("the admin status shows each instance's last reload, applied or refused", async () => {
    const admin = new Browser(cluster.instances[0]!.url);
    const { email } = await admin.register();
    await cluster.cliJson(["account", "update", "--email", email, "--admin"]);
    writeFileSync(cluster.config, original.replace('kind = "anthropic"', 'kind = "anthropc"'));
    try {
      await cluster.cli(["reload"]);
    } finally {
      writeFileSync(cluster.config, withModelY());
    }
    const status = await body(await admin.call("GET", "/api/admin/status"));
    expect(status.instances).toHaveLength(2);
    for (const i of status.instances) {
      expect(i.last_reload).toMatchObject({ reloaded: false, catalog_version: null, needs_restart: [] });
      expect(i.last_reload.error).toContain("providers[0].kind");
    }
  });
});
