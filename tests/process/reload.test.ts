import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_BEHAVIOUR, startMockUpstream, type MockUpstream } from "../support/mock-upstream.ts";
import { anthropicConfig, expectOneLineFailure, freePort, gateway, MAIN, startServe, tempInstallation, type Served } from "../support/cli.ts";
import { lastStreamCost } from "../support/prices.ts";

// Each test starts and stops a gateway process; a loaded 2-core machine needs more than 5 s.
setDefaultTimeout(60_000);

// Reload without restart (docs/operations.md#reload): SIGHUP and `gateway reload` read the config
// again; requests in flight finish on the config they started with, new ones run on the new one; a
// bad file is refused in one line and the running config kept; `gateway config check` validates.

let up: MockUpstream;
const folders: { remove(): void }[] = [];
const running: Served[] = [];
beforeAll(async () => {
  up = await startMockUpstream();
});
afterAll(async () => {
  for (const s of running) if (s.proc.exitCode === null) s.kill("SIGKILL");
  await up.stop();
  folders.forEach((f) => f.remove());
});

/** anthropicConfig at `times` its prices (3 and 15 USD per million tokens). */
const pricedConfig = (times: number, server: Record<string, string | number> = {}) =>
  anthropicConfig(up.url, server).replace("pricing = { input = 3.0, output = 15.0 }", `pricing = { input = ${3 * times}.0, output = ${15 * times}.0 }`);

/** A gateway on a free port: given by --port, or with `portFromConfig`, by the file's [server] port alone. */
async function served(server: Record<string, string | number> = {}, opts: { portFromConfig?: boolean } = {}): Promise<{ s: Served; url: string; key: string; config: string; port: number; db: string }> {
  const f = tempInstallation(pricedConfig(1, server));
  folders.push(f);
  const db = join(f.dir, "gateway.db");
  const cli = (args: string[]) => Bun.spawnSync(["bun", MAIN, ...args, "--config", f.config, "--db", db, "--json"]);
  expect(cli(["migrate"]).exitCode).toBe(0);
  expect(cli(["account", "create", "--email", "a@test.local", "--balance", "50"]).exitCode).toBe(0);
  const key = JSON.parse(cli(["key", "create", "--email", "a@test.local", "--rpm", "10000"]).stdout.toString()).key as string;
  const s = startServe(["--config", f.config, ...(opts.portFromConfig ? [] : ["--port", "0"]), "--db", db]);
  running.push(s);
  const url = await s.url();
  return { s, url, key, config: f.config, port: Number(new URL(url).port), db };
}

const messages = (url: string, key: string, stream: boolean) =>
  fetch(`${url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json", "anthropic-version": "2023-06-01" },
    body: JSON.stringify({ model: "claude-x", max_tokens: 100, stream, messages: [{ role: "user", content: "Hi" }] }),
  });

const costOf = async (res: Response) => (res.headers.get("content-type")?.includes("event-stream") ? lastStreamCost(await res.text()) : ((await res.json()) as { usage: { cost_usd: number } }).usage.cost_usd);

describe("SIGHUP", () => {
  it("lets streams in flight finish on the old prices and bills new requests at the new ones", async () => {
    const { s, url, key, config } = await served();
    const before = await costOf(await messages(url, key, false));
    // Long enough (4 s) that a reload on a loaded machine still lands while they run; checked below.
    up.setDefault({ kind: "slow_stream", events: 20, intervalMs: 200 });
    try {
      // Streams that started on the old config: their headers are in, their bodies still coming.
      const streams = await Promise.all([1, 2, 3].map(() => messages(url, key, true)));
      let finished = 0;
      const bodies = streams.map((r) => r.text().finally(() => finished++));
      writeFileSync(config, pricedConfig(10));
      s.kill("SIGHUP");
      await s.until(/gateway: reloaded .*catalog/);
      expect(finished).toBe(0);
      // Load across the swap: plain requests keep being answered.
      const during = await Promise.all([1, 2, 3, 4].map(() => messages(url, key, true)));
      const texts = await Promise.all(bodies);
      for (const [i, r] of streams.entries()) {
        expect(r.status).toBe(200);
        expect(texts[i]).toContain("message_stop");
      }
      const oldCosts = texts.map((t) => lastStreamCost(t)!);
      const newCosts = await Promise.all(during.map(async (r) => (expect(r.status).toBe(200), lastStreamCost(await r.text())!)));
      // Same usage each time: the in-flight streams at 1×, the ones after the reload at exactly 10×.
      expect(new Set(oldCosts).size).toBe(1);
      expect(new Set(newCosts).size).toBe(1);
      expect(newCosts[0]! / oldCosts[0]!).toBeCloseTo(10, 9);
    } finally {
      up.setDefault(DEFAULT_BEHAVIOUR);
    }
    expect((await costOf(await messages(url, key, false)))! / before!).toBeCloseTo(10, 9);
    s.kill("SIGTERM");
    expect(await s.exited()).toBe(0);
  });

  it("refuses a bad file in one logged line and keeps serving on the running config", async () => {
    const { s, url, key, config } = await served();
    const before = await costOf(await messages(url, key, false));
    writeFileSync(config, pricedConfig(10).replace('kind = "anthropic"', 'kind = "anthropc"'));
    s.kill("SIGHUP");
    const [line] = await s.until(/gateway: reload refused.*\n/);
    expect(line).toContain("providers[0].kind");
    const res = await messages(url, key, false);
    expect(res.status).toBe(200);
    expect(await costOf(res)).toBe(before);
    s.kill("SIGTERM");
    expect(await s.exited()).toBe(0);
  });
});

describe("gateway reload", () => {
  it("applies a changed file and prints one line", async () => {
    const { s, url, key, config, port, db } = await served();
    const before = await costOf(await messages(url, key, false));
    writeFileSync(config, pricedConfig(2));
    const r = await gateway(["reload", "--config", config, "--db", db, "--port", String(port)]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split("\n")).toHaveLength(1);
    expect(r.stdout).toStartWith(`reloaded ${config}: catalog `);
    expect((await costOf(await messages(url, key, false)))! / before!).toBeCloseTo(2, 9);
    s.kill("SIGTERM");
    expect(await s.exited()).toBe(0);
  });

  it("prints a bad file's reason, exits non-zero, and the old config keeps serving", async () => {
    const { s, url, key, config, port, db } = await served();
    const before = await costOf(await messages(url, key, false));
    writeFileSync(config, pricedConfig(2) + "[[models]]\nid = \"claude-x\"\n");
    const r = await gateway(["reload", "--config", config, "--db", db, "--port", String(port)]);
    expect(expectOneLineFailure(r)).toStartWith("gateway: reload refused, the running config is kept: ");
    expect(await costOf(await messages(url, key, false))).toBe(before);
    s.kill("SIGTERM");
    expect(await s.exited()).toBe(0);
  });

  it("reaches the server on the port of a file it refuses, and prints the refusal", async () => {
    const port = freePort();
    const { s, url, key, config, db } = await served({ port }, { portFromConfig: true });
    expect(url).toEndWith(`:${port}`);
    writeFileSync(config, pricedConfig(2, { port }).replace('kind = "anthropic"', 'kind = "anthropc"'));
    const r = await gateway(["reload", "--config", config, "--db", db]);
    const line = expectOneLineFailure(r);
    expect(line).toStartWith("gateway: reload refused, the running config is kept: ");
    expect(line).toContain("providers[0].kind");
    expect((await messages(url, key, false)).status).toBe(200);
    s.kill("SIGTERM");
    expect(await s.exited()).toBe(0);
  });

  it("prints the reason of a file that names no port it can read, rather than trying 8080", async () => {
    const f = tempInstallation('[server\nport = 18555\n');
    folders.push(f);
    const line = expectOneLineFailure(await gateway(["reload", "--config", f.config]));
    expect(line).toContain("not valid TOML");
    expect(line).not.toContain("8080");
  });

  it("names a changed listen port as needing a restart and keeps listening where it was", async () => {
    const { s, url, key, config, port, db } = await served({ port: 18181 });
    writeFileSync(config, pricedConfig(1, { port: 18182 }));
    const r = await gateway(["reload", "--config", config, "--db", db, "--port", String(port)]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("needs restart, kept as running: server.port");
    expect((await messages(url, key, false)).status).toBe(200);
    s.kill("SIGTERM");
    expect(await s.exited()).toBe(0);
  });

  it("says in one line that no server answers on the port", async () => {
    const f = tempInstallation();
    folders.push(f);
    const r = await gateway(["reload", "--config", f.config, "--port", "1"]);
    expect(expectOneLineFailure(r)).toContain("reload: http://127.0.0.1:1/reload:");
  });
});

describe("gateway config check", () => {
  it("validates a file without serving and without its provider secrets set", async () => {
    const f = tempInstallation(pricedConfig(1).replace('api_key = "sk-upstream"', 'api_key = "${UNSET_UPSTREAM_KEY_FOR_TEST}"'));
    folders.push(f);
    const r = await gateway(["config", "check", f.config]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toMatch(new RegExp(`^OK ${f.config}: catalog \\w+, 1 model\\(s\\), 1 provider\\(s\\)$`));
  });

  it("refuses a bad file with its one-line reason", async () => {
    const f = tempInstallation(pricedConfig(1).replace('provider = "anthropic", model', 'provider = "nobody", model'));
    folders.push(f);
    expect(expectOneLineFailure(await gateway(["config", "check", f.config]))).toBe(`gateway: ${f.config}: models[0].routes[0].provider: no provider with id 'nobody'`);
  });
});

describe("gateway config check --config", () => {
  it("checks the file --config names when no FILE is given", async () => {
    const f = tempInstallation(pricedConfig(1).replace('provider = "anthropic", model', 'provider = "nobody", model'));
    folders.push(f);
    expect(expectOneLineFailure(await gateway(["config", "check", "--config", f.config]))).toBe(`gateway: ${f.config}: models[0].routes[0].provider: no provider with id 'nobody'`);
  });

  it("refuses a FILE and a different --config rather than ignore one", async () => {
    const good = tempInstallation(pricedConfig(1));
    const bad = tempInstallation("[server\n");
    folders.push(good, bad);
    expect(expectOneLineFailure(await gateway(["config", "check", good.config, "--config", bad.config]))).toContain("not both");
  });
});
