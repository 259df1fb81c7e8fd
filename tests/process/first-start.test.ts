import { afterAll, describe, expect, it } from "bun:test";
import { chmodSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startMockUpstream } from "../support/mock-upstream.ts";
import { anthropicConfig, freePort, MAIN, startServe, tempInstallation } from "../support/cli.ts";

// Issue 13, first start: `bun install && bun run start` on a fresh clone, and the binary in an empty
// folder, must work; what cannot work is one line that names the cause.

const folders: { remove(): void }[] = [];
const folder = (config?: string) => {
  const f = tempInstallation(config);
  folders.push(f);
  return f;
};
afterAll(() => folders.forEach((f) => f.remove()));

const chat = (url: string, key: string) =>
  fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "demo", max_tokens: 50, messages: [{ role: "user", content: "Hello" }] }),
  });

describe("the first start", () => {
  it("creates ./data/ in an empty working folder and serves the printed demo key", async () => {
    const f = folder();
    const s = startServe(["--config", f.config, "--port", "0"], { cwd: f.dir });
    try {
      const url = await s.url();
      const key = (await s.until(/gk_sk_[A-Za-z0-9]+/))[0];
      const res = await chat(url, key);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { usage: { cost_usd: number } };
      expect(body.usage.cost_usd).toBeGreaterThan(0);
      expect(existsSync(join(f.dir, "data", "gateway.db"))).toBe(true);
    } finally {
      s.kill();
      expect(await s.exited()).toBe(0);
    }
  });

  it("says in one line on stderr that Bun's fetch limit is low when started without BUN_CONFIG_MAX_HTTP_REQUESTS raised", async () => {
    const f = folder();
    const s = startServe(["--config", f.config, "--port", "0"], { cwd: f.dir, env: { BUN_CONFIG_MAX_HTTP_REQUESTS: "256" } });
    try {
      await s.url();
      await s.until(/gk_sk_/);
      // stderr is a pipe of its own: its line may arrive after stdout's.
      for (const deadline = Date.now() + 5000; !s.err.includes("\n") && Date.now() < deadline; ) await Bun.sleep(20);
      expect(s.err.trimEnd().split("\n")).toEqual([
        "gateway: BUN_CONFIG_MAX_HTTP_REQUESTS is 256: Bun runs at most 256 upstream calls at once and queues the rest; start with BUN_CONFIG_MAX_HTTP_REQUESTS=4096 (docs/operations.md)",
      ]);
    } finally {
      s.kill();
      expect(await s.exited()).toBe(0);
    }
  });

  it("says nothing of Bun's fetch limit when BUN_CONFIG_MAX_HTTP_REQUESTS is raised, as bun run start does", async () => {
    const f = folder();
    const s = startServe(["--config", f.config, "--port", "0"], { cwd: f.dir, env: { BUN_CONFIG_MAX_HTTP_REQUESTS: "4096" } });
    try {
      await s.url();
      await s.until(/gk_sk_/);
      await Bun.sleep(300); // a line on stderr would come within this
      expect(s.err).not.toContain("BUN_CONFIG_MAX_HTTP_REQUESTS");
    } finally {
      s.kill();
      expect(await s.exited()).toBe(0);
    }
  });

  it("creates every missing parent folder of --db", async () => {
    const f = folder();
    const db = join(f.dir, "var", "lib", "gateway", "gateway.db");
    const s = startServe(["--config", f.config, "--port", "0", "--db", db]);
    try {
      await s.url();
      expect(existsSync(db)).toBe(true);
    } finally {
      s.kill();
      await s.exited();
    }
  });

  it("names in one line the folder it cannot create, and exits non-zero", async () => {
    const f = folder();
    writeFileSync(join(f.dir, "plain-file"), "x");
    const s = startServe(["--config", f.config, "--port", "0", "--db", join(f.dir, "plain-file", "sub", "gateway.db")]);
    expect(await s.exited()).not.toBe(0);
    expect(s.err.trimEnd().split("\n")).toEqual([
      `gateway: cannot create the folder ${join(f.dir, "plain-file", "sub")} for the database ${join(f.dir, "plain-file", "sub", "gateway.db")}: a part of the path is a file, not a folder`,
    ]);
  });

  // Root writes anywhere, so the refusal is seen as another user (the image runs as one): nobody, via runuser.
  const asNobody = process.getuid?.() === 0 && Bun.spawnSync(["runuser", "-u", "nobody", "--", "bun", "-e", `await Bun.file(${JSON.stringify(MAIN)}).text()`]).exitCode === 0;
  it.skipIf(!asNobody)("names in one line a folder the user cannot write in (as user nobody)", async () => {
    const f = folder();
    chmodSync(f.dir, 0o755);
    const db = join(f.dir, "gateway.db");
    const proc = Bun.spawn(["runuser", "-u", "nobody", "--", "bun", MAIN, "serve", "--port", "0", "--db", db], { stdout: "pipe", stderr: "pipe" });
    const [code, err] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
    expect(code).not.toBe(0);
    expect(err.trimEnd().split("\n")).toEqual([`gateway: the folder ${f.dir} of the database is not writable by this user (uid 65534): permission denied (the user running the gateway cannot write there)`]);
  });

  it("says in one line that a file is not a database", async () => {
    const f = folder();
    const db = join(f.dir, "notes.db");
    writeFileSync(db, "these are my notes, not a database ".repeat(200));
    const s = startServe(["--config", f.config, "--port", "0", "--db", db]);
    expect(await s.exited()).not.toBe(0);
    expect(s.err.trimEnd().split("\n")).toEqual([`gateway: cannot open the database ${db}: the file is not a SQLite database`]);
  });

  it("with real providers makes no demo key and prints how to create the first account", async () => {
    await using up = await startMockUpstream();
    const f = folder(anthropicConfig(up.url));
    const s = startServe(["--config", f.config, "--port", "0", "--db", join(f.dir, "gateway.db")]);
    try {
      await s.until(/gateway key create/);
      expect(s.out).not.toContain("gk_sk_");
      expect(s.out).toContain("gateway account create --email");
    } finally {
      s.kill();
      await s.exited();
    }
  });
});

describe("the listen address", () => {
  it("refuses a port in use with one line, and the running server keeps all the traffic", async () => {
    const f = folder();
    const port = freePort();
    const first = startServe(["--config", f.config, "--port", String(port), "--db", join(f.dir, "one.db")]);
    try {
      const url = await first.url();
      const key = (await first.until(/gk_sk_[A-Za-z0-9]+/))[0];
      const second = startServe(["--config", f.config, "--port", String(port), "--db", join(f.dir, "two.db")]);
      expect(await second.exited()).not.toBe(0);
      expect(second.err.trimEnd().split("\n")).toEqual([`gateway: port ${port} is in use`]);
      const statuses = await Promise.all(Array.from({ length: 10 }, () => fetch(`${url}/v1/me`, { headers: { "x-api-key": key } }).then((r) => r.status)));
      expect(statuses).toEqual(Array(10).fill(200));
    } finally {
      first.kill();
      await first.exited();
    }
  });

  it("binds [server] host and prints the address it really listens on", async () => {
    const f = folder('[server]\nhost = "127.0.0.1"\n');
    const s = startServe(["--config", f.config, "--port", "0", "--db", join(f.dir, "gateway.db")]);
    try {
      const url = await s.url();
      const port = new URL(url).port;
      expect(s.out).toContain(`address 127.0.0.1:${port}`);
    } finally {
      s.kill();
      await s.exited();
    }
  });

  it("listens on IPv6 loopback alone when host is ::1", async () => {
    const f = folder('[server]\nhost = "::1"\n');
    const s = startServe(["--config", f.config, "--port", "0", "--db", join(f.dir, "gateway.db")]);
    try {
      const url = await s.url();
      const port = new URL(url).port;
      expect(s.out).toContain(`address [::1]:${port}`);
      expect((await fetch(`http://[::1]:${port}/status`)).status).toBe(200);
      expect(fetch(`http://127.0.0.1:${port}/status`)).rejects.toThrow();
    } finally {
      s.kill();
      await s.exited();
    }
  });
});
