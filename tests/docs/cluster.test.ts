import { describe, expect, it } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { loadConfig, type Config } from "../../src/config/load.ts";
import { ipAllowed } from "../../src/core/ip.ts";
import { ROOT } from "../support/cli.ts";

// docs/scaling.md's cluster: no Docker where these tests run, so the compose file, the shared config
// and nginx's file are read the way the tools would, and checked against what the guide promises.
const read = (path: string) => readFileSync(join(ROOT, "docs/examples", path), "utf8");

interface Service {
  image?: string;
  build?: string;
  command?: string[];
  restart?: string;
  environment?: Record<string, string>;
  volumes?: string[];
  depends_on?: Record<string, { condition: string }> | string[];
  stop_grace_period?: string;
  ports?: string[];
  networks?: Record<string, { ipv4_address?: string }>;
}

const compose = Bun.YAML.parse(read("cluster-compose.yaml")) as { services: Record<string, Service> };
const services = compose.services;
const INSTANCES = ["gw-1", "gw-2", "gw-3"];
const nginx = read("cluster-nginx.conf");
const seconds = (s: string) => Number(/^(\d+)s?$/.exec(s)?.[1] ?? NaN);

/** A service's environment as its container sees it, compose's `${NAME:?message}` given a stand-in value. */
function containerEnv(service: Service): Record<string, string> {
  return Object.fromEntries(Object.entries(service.environment ?? {}).map(([k, v]) => [k, v.replace(/\$\{(\w+)(?::?[?-][^}]*)?\}/g, (_, name: string) => `${name.toLowerCase()}-value`)]));
}

/** cluster.toml as the given service's gateway loads it: the mounted file, with that container's environment. */
function configOf(name: string): Config {
  const service = services[name]!;
  const path = service.environment!.GATEWAY_CONFIG!;
  expect(service.volumes).toContain(`./cluster.toml:${path}:ro`);
  return loadConfig(join(ROOT, "docs/examples/cluster.toml"), containerEnv(service));
}

describe("cluster-compose.yaml", () => {
  it("has PostgreSQL 16, Valkey 7, a one-shot migration, three gateways and nginx", () => {
    expect(Object.keys(services).sort()).toEqual(["gw-1", "gw-2", "gw-3", "migrate", "nginx", "postgres", "valkey"]);
    expect(services.postgres!.image).toBe("postgres:16");
    expect(services.valkey!.image).toMatch(/^(valkey\/valkey|redis):7/);
    expect(services.nginx!.image).toMatch(/^nginx:/);
  });

  it("builds every gateway and the migration from the project's Dockerfile", () => {
    for (const name of [...INSTANCES, "migrate"]) expect({ name, build: services[name]!.build }).toEqual({ name, build: "../.." });
  });

  it("runs `gateway migrate` once, after PostgreSQL is ready, and every gateway only after it succeeded", () => {
    const migrate = services.migrate!;
    expect(migrate.command).toEqual(["migrate"]);
    expect(migrate.restart).toBe("no");
    expect(migrate.depends_on).toEqual({ postgres: { condition: "service_healthy" } });
    for (const name of INSTANCES) {
      const gw = services[name]!;
      expect(gw.command).toEqual(["serve"]);
      expect((gw.depends_on as Record<string, { condition: string }>).migrate).toEqual({ condition: "service_completed_successfully" });
    }
  });

  it("raises Bun's concurrent fetch limit to 4096 in every gateway container", () => {
    for (const name of [...INSTANCES, "migrate"]) expect({ name, limit: services[name]!.environment!.BUN_CONFIG_MAX_HTTP_REQUESTS }).toEqual({ name, limit: "4096" });
  });

  it("gives each gateway longer to stop than the config's drain", () => {
    for (const name of INSTANCES) {
      const drainS = configOf(name).shutdownTimeoutMs / 1000;
      expect(seconds(services[name]!.stop_grace_period!)).toBeGreaterThan(drainS);
    }
  });

  it("publishes only nginx's port", () => {
    const published = Object.entries(services).filter(([, s]) => s.ports?.length).map(([name]) => name);
    expect(published).toEqual(["nginx"]);
  });
});

describe("cluster.toml, as each gateway loads it", () => {
  it("puts the database in the compose file's PostgreSQL and the token buckets in its Valkey", () => {
    const config = configOf("gw-1");
    const db = new URL(config.databaseUrl!);
    expect(db.protocol).toBe("postgres:");
    expect(db.hostname).toBe("postgres");
    expect(db.username).toBe(services.postgres!.environment!.POSTGRES_USER!);
    expect(db.pathname).toBe(`/${services.postgres!.environment!.POSTGRES_DB}`);
    expect(decodeURIComponent(db.password)).toBe(containerEnv(services["gw-1"]!).POSTGRES_PASSWORD!);
    const store = new URL(config.limitStore!);
    expect(store.protocol).toBe("redis:");
    expect(store.hostname).toBe("valkey");
  });

  it("gives each instance its own stable instance_id and the 30 s hold timeout", () => {
    const ids = INSTANCES.map((name) => configOf(name).cluster.instanceId);
    expect(ids).toEqual(INSTANCES);
    for (const name of INSTANCES) expect(configOf(name).cluster.holdTimeoutMs).toBe(30_000);
  });

  it("listens on every interface and believes X-Forwarded-For from nginx's fixed address only", () => {
    const config = configOf("gw-1");
    expect(config.host).toBe("0.0.0.0");
    const nginxAddress = services.nginx!.networks!.default!.ipv4_address!;
    expect(ipAllowed(config.trustProxy, nginxAddress)).toBe(true);
    expect(ipAllowed(config.trustProxy, "10.89.0.11")).toBe(false);
  });

  it("names [database] url, [limits] store and both [cluster] keys rather than leaning on defaults", () => {
    const file = Bun.TOML.parse(read("cluster.toml")) as Record<string, Record<string, unknown>>;
    expect(Object.keys(file.database!)).toEqual(["url"]);
    expect(Object.keys(file.limits!)).toContain("store");
    expect(Object.keys(file.cluster!).sort()).toEqual(["hold_timeout_s", "instance_id"]);
  });
});

describe("cluster-nginx.conf", () => {
  const upstream = /upstream gateway \{([\s\S]*?)\n\}/.exec(nginx)?.[1] ?? "";

  it("balances over the three gateways of the compose file on their port", () => {
    const port = configOf("gw-1").port;
    const servers = [...upstream.matchAll(/^\s*server (\S+)/gm)].map((m) => m[1]);
    expect(servers).toEqual(INSTANCES.map((name) => `${name}:${port}`));
  });

  it("takes a failing instance out by passive checks and re-resolves the names", () => {
    expect(upstream.match(/max_fails=\d+ fail_timeout=\d+s/g)).toHaveLength(3);
    expect(upstream.match(/ resolve /g)).toHaveLength(3);
    expect(upstream).toContain("zone gateway");
    expect(nginx).toMatch(/^resolver 127\.0\.0\.11 /m);
  });

  it("passes streams on unbuffered, waits long, forwards the client's address and keeps /metrics off", () => {
    expect(nginx).toContain("proxy_buffering off;");
    expect(seconds(/proxy_read_timeout (\d+s);/.exec(nginx)![1]!)).toBeGreaterThan(600);
    expect(nginx).toContain("proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;");
    expect(nginx).toContain("location = /metrics");
    expect(nginx).toContain("client_max_body_size 21m;");
  });

  it("never sends a request already sent to another instance (nginx's default for POST kept)", () => {
    expect(nginx).not.toContain("non_idempotent");
    expect(nginx).toMatch(/proxy_next_upstream error timeout;/);
  });
});
