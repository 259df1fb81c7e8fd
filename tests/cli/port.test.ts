import { afterAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { expectOneLineFailure, freePort, gateway, MAIN, ROOT, startServe, tempInstallation } from "../support/cli.ts";

// Each test starts a gateway process: seconds on a loaded machine.
setDefaultTimeout(60_000);

// Where `gateway serve` listens (docs/operations.md#start): --port, else PORT, else [server] port, else 8080.

const folders: { remove(): void }[] = [];
afterAll(() => folders.forEach((f) => f.remove()));

/** Starts serve with a config naming `configPort`; returns the port it printed it listens on, and stops it. */
async function listeningPort(configPort: number, args: string[], env: Record<string, string>): Promise<number> {
  const f = tempInstallation(`[server]\nhost = "127.0.0.1"\nport = ${configPort}\n`);
  folders.push(f);
  const s = startServe(["--config", f.config, "--db", f.db, ...args], { env });
  try {
    return Number(new URL(await s.url()).port);
  } finally {
    s.kill("SIGTERM");
    await s.exited();
  }
}

describe("gateway serve's port", () => {
  it("is --port over PORT over the config's", async () => {
    const [flag, variable, config] = [freePort(), freePort(), freePort()];
    expect(await listeningPort(config, ["--port", String(flag)], { PORT: String(variable) })).toBe(flag);
    expect(await listeningPort(config, [], { PORT: String(variable) })).toBe(variable);
  });

  it("keeps serving when the options every command takes come before serve", async () => {
    const f = tempInstallation();
    folders.push(f);
    const port = freePort();
    const proc = Bun.spawn(["bun", MAIN, "--config", f.config, "--db", f.db, "serve", "--port", String(port)], { cwd: ROOT, stdout: "pipe", stderr: "ignore" });
    try {
      const reader = proc.stdout.getReader();
      let out = "";
      while (!out.includes("listening on")) {
        const { value, done } = await reader.read();
        if (done) break;
        out += new TextDecoder().decode(value);
      }
      expect(out).toContain(`listening on http://127.0.0.1:${port}`);
      // The command's process ended right after its first lines when only `serve` as the first word kept it.
      await Bun.sleep(1_000);
      expect(proc.exitCode).toBeNull();
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    } finally {
      proc.kill("SIGTERM");
      await proc.exited;
    }
  });

  it("takes an empty PORT as unset, and serves on the config's port", async () => {
    const config = freePort();
    expect(await listeningPort(config, [], { PORT: "" })).toBe(config);
  });

  it("refuses a PORT that is not a port number, naming PORT rather than --port", async () => {
    const f = tempInstallation();
    folders.push(f);
    const line = expectOneLineFailure(await gateway(["serve", "--config", f.config, "--db", f.db], { env: { PORT: "http" } }));
    expect(line).toBe("gateway: PORT: not a port number: http");
  });
});
