import { describe, expect, it } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { loadConfig } from "../../src/config/load.ts";
import { gateway, ROOT } from "../support/cli.ts";

// Docker cannot run where these tests run: they read the Dockerfile, .dockerignore and the example
// files the way the tools would, and check what the operator's guide promises about them.
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");
const DEFAULT_SHUTDOWN_S = loadConfig(undefined).shutdownTimeoutMs / 1000;

/** Dockerfile instructions of the last stage (the image that runs), continuation lines joined. */
function runtimeStage(): string[] {
  const lines = read("Dockerfile").replace(/\\\n/g, " ").split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("#"));
  const from = lines.findLastIndex((l) => /^FROM\s/i.test(l));
  return lines.slice(from);
}

/** Docker's rule: a path is left out when it, or a folder above it, matches a pattern (rooted at the context). */
function ignored(path: string): boolean {
  const patterns = read(".dockerignore").split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("#"));
  const parts = path.split("/");
  return patterns.some((p) => {
    const glob = new Bun.Glob(p.replace(/^\//, "").replace(/\/$/, ""));
    return parts.some((_, i) => glob.match(parts.slice(0, i + 1).join("/")));
  });
}

/** A systemd unit as sections of key → values; throws on a line that is neither. */
function parseUnit(text: string): Record<string, Record<string, string[]>> {
  const unit: Record<string, Record<string, string[]>> = {};
  let section: Record<string, string[]> | undefined;
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (!line || line.startsWith("#") || line.startsWith(";")) continue;
    const head = /^\[(\w+)\]$/.exec(line);
    if (head) {
      section = unit[head[1]!] = {};
      continue;
    }
    const kv = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (!kv || !section) throw new Error(`gateway.service line ${i + 1} is not a key=value in a section: ${line}`);
    (section[kv[1]!] ??= []).push(kv[2]!);
  }
  return unit;
}

const seconds = (s: string) => Number(/^(\d+)s?$/.exec(s)?.[1] ?? NaN);

describe("the Docker image", () => {
  it("checks its health with `gateway healthcheck` (the image has no curl)", () => {
    const check = runtimeStage().filter((l) => /^HEALTHCHECK\s/i.test(l));
    expect(check).toHaveLength(1);
    expect(check[0]).toMatch(/\sCMD\s+(\["gateway",\s*"healthcheck"|gateway healthcheck)/);
  });

  it("runs as a non-root user with the database on the /data volume", () => {
    const stage = runtimeStage();
    expect(stage).toContainEqual(expect.stringMatching(/^USER\s+(?!root\b|0\b)\S+/));
    expect(stage).toContainEqual(expect.stringMatching(/^VOLUME\s+\["\/data"\]/));
    expect(stage).toContainEqual('CMD ["serve", "--db", "/data/gateway.db"]');
  });

  it("leaves the live database, node_modules, the binary, bench output and .git out of the build context", () => {
    for (const path of ["data/gateway.db", "data/gateway.db-wal", "gateway.db-shm", "bench/out/backup/gateway.db", "node_modules/elysia/package.json", "gateway", ".git/HEAD", "bench/out/run.json"])
      expect({ path, ignored: ignored(path) }).toEqual({ path, ignored: true });
  });

  it("keeps in the build context what the build needs (sources, tests for the type check, migrations, lockfile)", () => {
    for (const path of ["package.json", "bun.lock", "tsconfig.json", "src/cli/main.ts", "src/store/engine/sqlite/client.ts", "tests/docs/packaging.test.ts", "bench/run.ts", "drizzle/0000_init.sql", "scripts/embed-migrations.ts"])
      expect({ path, ignored: ignored(path) }).toEqual({ path, ignored: false });
  });
});

describe("docs/examples", () => {
  it("gateway.service stops with SIGTERM, waits longer than the drain, and restarts only failures", () => {
    const unit = parseUnit(read("docs/examples/gateway.service"));
    expect(Object.keys(unit)).toEqual(["Unit", "Service", "Install"]);
    const svc = unit.Service!;
    expect(svc.ExecStart?.[0]).toMatch(/^\/\S+\/gateway serve\b/);
    expect(svc.KillSignal).toEqual(["SIGTERM"]);
    expect(seconds(svc.TimeoutStopSec![0]!)).toBeGreaterThan(DEFAULT_SHUTDOWN_S);
    expect(svc.Restart).toEqual(["on-failure"]);
    expect(unit.Install!.WantedBy).toEqual(["multi-user.target"]);
  });

  it("compose.yaml parses and passes the config by a read-only mount named in GATEWAY_CONFIG", () => {
    const doc = Bun.YAML.parse(read("docs/examples/compose.yaml")) as {
      services: Record<string, { environment?: Record<string, string>; volumes?: string[]; stop_grace_period?: string; command?: string[] }>;
    };
    const gw = doc.services.gateway!;
    const configPath = gw.environment!.GATEWAY_CONFIG!;
    expect(gw.volumes).toContain(`./gateway.toml:${configPath}:ro`);
    expect(gw.volumes).toContainEqual(expect.stringMatching(/^[\w-]+:\/data$/));
    expect(seconds(gw.stop_grace_period!)).toBeGreaterThan(DEFAULT_SHUTDOWN_S);
  });

  it("gateway.toml is a valid config for a gateway behind a proxy on the same host", () => {
    const config = loadConfig(join(ROOT, "docs/examples/gateway.toml"), { ANTHROPIC_API_KEY: "sk-ant-x", OPENAI_API_KEY: "sk-x" });
    expect(config.host).toBe("127.0.0.1");
    expect(config.trustProxy.length).toBeGreaterThan(0);
    expect(config.metrics).toEqual({ mode: "loopback" });
  });

  it("the proxy examples pass streams on unbuffered and keep /metrics off the public side", () => {
    const nginx = read("docs/examples/nginx.conf");
    expect(nginx).toContain("proxy_buffering off;");
    expect(nginx).toMatch(/proxy_read_timeout \d{3,}s;/);
    expect(nginx).toContain("proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;");
    expect(nginx).toContain("location = /metrics");
    const caddy = read("docs/examples/Caddyfile");
    expect(caddy).toContain("flush_interval -1");
    expect(caddy).toContain("respond /metrics 404");
  });
});

// Bun's fetch runs 256 requests at once and queues the rest: every documented way to start the
// gateway raises it (docs/operations.md, Start).
describe("Bun's concurrent fetch limit", () => {
  it("is raised to 4096 by bun run start and bun run gateway", () => {
    const scripts = (JSON.parse(read("package.json")) as { scripts: Record<string, string> }).scripts;
    expect(scripts.start).toStartWith("BUN_CONFIG_MAX_HTTP_REQUESTS=4096 ");
    expect(scripts.gateway).toStartWith("BUN_CONFIG_MAX_HTTP_REQUESTS=4096 ");
  });

  it("is raised to 4096 by the image, the systemd unit and the compose example", () => {
    expect(runtimeStage()).toContain("ENV BUN_CONFIG_MAX_HTTP_REQUESTS=4096");
    expect(parseUnit(read("docs/examples/gateway.service")).Service!.Environment).toContain("BUN_CONFIG_MAX_HTTP_REQUESTS=4096");
    expect(read("docs/examples/compose.yaml")).toMatch(/BUN_CONFIG_MAX_HTTP_REQUESTS: "4096"/);
  });
});

describe("the example configs", () => {
  // What operations.md tells an operator to run before a reload: each example passes it as shipped,
  // with only the variables that are no secrets of providers, payments or mail set (those left unset).
  const connection = { POSTGRES_PASSWORD: "x", VALKEY_PASSWORD: "x", GATEWAY_INSTANCE_ID: "gw-1" };
  for (const file of ["docs/examples/gateway.toml", "docs/examples/cluster.toml"]) {
    it(`gateway config check --config ${file} says OK`, async () => {
      const r = await gateway(["config", "check", "--config", file], { env: connection });
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
      expect(r.stdout).toStartWith(`OK ${file}: catalog `);
    });
  }
});
