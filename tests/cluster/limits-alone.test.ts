// Instances on one PostgreSQL without `[limits] store` each count their own buckets: behind N of them
// a key gets N times its rpm (docs/scaling.md#the-config-lines). The start says so.
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { startCluster, type TestCluster } from "../support/cluster.ts";
import { freePort, startServe } from "../support/cli.ts";

setDefaultTimeout(120_000);

let cluster: TestCluster;

beforeAll(async () => {
  cluster = await startCluster({ instances: 0 });
});

afterAll(async () => {
  await cluster?.stop();
});

const WARNING = /limits are counted by each instance/;

describe("the start of an instance on PostgreSQL", () => {
  it("without [limits] store warns on stderr that each instance counts its own limits", async () => {
    const alone = cluster.config.replace(/\.toml$/, "-alone.toml");
    writeFileSync(alone, readFileSync(cluster.config, "utf8").replace(/^store = .*$/m, ""));
    const served = startServe(["--port", String(freePort())], { env: { GATEWAY_CONFIG: alone, BUN_CONFIG_MAX_HTTP_REQUESTS: "4096" } });
    try {
      await served.url();
      await served.until(/listening/);
      await Bun.sleep(200);
      expect(served.err).toMatch(WARNING);
      expect(served.err).toContain("[limits] store");
    } finally {
      served.kill("SIGKILL");
      await served.exited(10_000);
    }
  });

  it("with [limits] store says nothing of it", async () => {
    const instance = await cluster.startInstance("gw-1");
    await Bun.sleep(200);
    expect(instance.served.err).not.toMatch(WARNING);
  });
});
