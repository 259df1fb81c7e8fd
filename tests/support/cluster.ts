// A local cluster as an operator runs one (docs/scaling.md): one PostgreSQL, one Redis, several
// `gateway serve` processes on one config file, each on its own port, calling one mock upstream.
// Tests spread requests over the instances themselves (no load balancer: a request's instance is
// the test's choice, so "whichever instance it reaches" is exact).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseConfig, type Config } from "../../src/config/load.ts";
import { migratePostgres } from "../../src/store/engine/postgres/client.ts";
import { freePort, gateway, startServe, tempInstallation, type CliResult, type Served } from "./cli.ts";
import { startMockUpstream, type MockUpstream } from "./mock-upstream.ts";
import { startPostgres, type TestPostgres } from "./postgres.ts";
import { startTestRedis, type TestRedis } from "./redis-server.ts";

/**
 * An in-process instance's config on the PostgreSQL database at `url` (no file, no access log);
 * `sections`: more of the config's tables as they are (`limits`, `dashboard`).
 */
export function postgresConfig(
  url: string,
  o: { providers: Record<string, unknown>[]; models: Record<string, unknown>[]; instanceId?: string; server?: Record<string, unknown>; sections?: Record<string, unknown> },
): Config {
  return parseConfig(
    {
      ...o.sections,
      server: { host: "127.0.0.1", access_log: false, ...o.server },
      database: { url },
      ...(o.instanceId ? { cluster: { instance_id: o.instanceId } } : {}),
      providers: o.providers,
      models: o.models,
    },
    "test config",
  );
}

export interface Instance {
  name: string;
  url: string;
  served: Served;
}

export interface TestCluster {
  up: MockUpstream;
  pg: TestPostgres;
  redis: TestRedis;
  /** The gateway's database. */
  databaseUrl: string;
  config: string;
  instances: Instance[];
  /** The CLI on the cluster's config (GATEWAY_CONFIG), as an operator on any machine runs it. */
  cli(args: string[]): Promise<CliResult>;
  /** `gateway … --json`, parsed; throws with what it printed when it fails. */
  cliJson<T = Record<string, unknown>>(args: string[]): Promise<T>;
  /** Starts one more instance (or a replacement) on the same config. */
  startInstance(name: string): Promise<Instance>;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  instances?: number;
  /** Extra TOML appended to the config (a [cluster] hold_timeout_s, [limits] default_rpm …). */
  extra?: string;
}

/** The config: the mock upstream's one Messages model, PostgreSQL, Redis. */
function clusterConfig(up: MockUpstream, databaseUrl: string, redisUrl: string, extra: string): string {
  return `[server]
host = "127.0.0.1"
shutdown_timeout_s = 5

[database]
url = "${databaseUrl}"

[limits]
store = "${redisUrl}"
# Far above what a test sends, so that only the rate-limit test (a key's own --rpm) meets a limit.
default_rpm = 100000

[[providers]]
id = "anthropic"
kind = "anthropic"
base_url = "${up.url}"
api_key = "sk-upstream"

[[models]]
id = "claude-x"
modalities = ["text"]
endpoints = ["messages", "chat.completions"]
pricing = { input = 3.0, output = 15.0 }
routes = [{ provider = "anthropic", model = "claude-x-1" }]
${extra}`;
}

let clusters = 0;

export async function startCluster(opts: ClusterOptions = {}): Promise<TestCluster> {
  const [up, pg, redis] = await Promise.all([startMockUpstream(), startPostgres(), startTestRedis()]);
  const databaseUrl = await pg.createDatabase(`cluster_${process.pid}_${++clusters}`);
  await migratePostgres(databaseUrl);
  const inst = tempInstallation();
  const config = join(inst.dir, "gateway.toml");
  writeFileSync(config, clusterConfig(up, databaseUrl, redis.url, opts.extra ?? ""));
  const env = { GATEWAY_CONFIG: config, BUN_CONFIG_MAX_HTTP_REQUESTS: "4096" };
  const instances: Instance[] = [];
  const startInstance = async (name: string): Promise<Instance> => {
    const served = startServe(["--port", String(freePort())], { env });
    const instance = { name, url: await served.url(), served };
    instances.push(instance);
    return instance;
  };
  const cli = (args: string[]) => gateway(args, { env });
  const cluster: TestCluster = {
    up,
    pg,
    redis,
    databaseUrl,
    config,
    instances,
    cli,
    async cliJson<T>(args: string[]) {
      const r = await cli([...args, "--json"]);
      if (r.code !== 0) throw new Error(`gateway ${args.join(" ")} failed (${r.code}):\n${r.stdout}\n${r.stderr}`);
      return JSON.parse(r.stdout) as T;
    },
    startInstance,
    async stop() {
      for (const i of instances) i.served.kill("SIGKILL");
      await Promise.all(instances.map((i) => i.served.exited(10_000)));
      await Promise.all([up.stop(), redis.stop(), pg.stop()]);
      inst.remove();
    },
  };
  try {
    // One at a time: the first applies nothing (migrated above), the rest find the schema current.
    for (let i = 0; i < (opts.instances ?? 3); i++) await startInstance(`gw-${i + 1}`);
  } catch (e) {
    await cluster.stop();
    throw e;
  }
  return cluster;
}
