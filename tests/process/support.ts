import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// `gateway serve` as an operator runs it: its own process, its own working folder, signals from
// outside. Everything it prints (stdout and stderr) is kept in order of arrival per stream.

export const MAIN = join(import.meta.dir, "../../src/cli/main.ts");

export interface Served {
  proc: Bun.Subprocess<"ignore", "pipe", "pipe">;
  /** What it printed on stdout so far. */
  readonly out: string;
  readonly err: string;
  /** Reads on until stdout matches; returns the match. */
  until(pattern: RegExp, ms?: number): Promise<RegExpMatchArray>;
  /** Resolves with the exit code (or null after `ms`). */
  exited(ms?: number): Promise<number | null>;
  /** The base URL from the listening line. */
  url(): Promise<string>;
  kill(signal?: NodeJS.Signals): void;
}

function childEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !["GATEWAY_CONFIG", "GATEWAY_DB", "PORT"].includes(k)) env[k] = v;
  return { ...env, ...extra };
}

export function startServe(args: string[], opts: { cwd?: string; env?: Record<string, string> } = {}): Served {
  const proc = Bun.spawn(["bun", MAIN, "serve", ...args], { cwd: opts.cwd, env: childEnv(opts.env ?? {}), stdout: "pipe", stderr: "pipe" });
  let out = "";
  let err = "";
  let changed: () => void = () => {};
  const pump = async (stream: ReadableStream<Uint8Array>, add: (s: string) => void) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) {
      add(decoder.decode(chunk, { stream: true }));
      changed();
    }
  };
  const done = Promise.all([pump(proc.stdout, (s) => (out += s)), pump(proc.stderr, (s) => (err += s))]);
  const served: Served = {
    proc,
    get out() {
      return out;
    },
    get err() {
      return err;
    },
    async until(pattern, ms = 10_000) {
      const deadline = Date.now() + ms;
      for (;;) {
        const m = out.match(pattern);
        if (m) return m;
        if (proc.exitCode !== null) {
          await done;
          const m2 = out.match(pattern);
          if (m2) return m2;
          throw new Error(`serve exited ${proc.exitCode} without printing ${pattern}:\n${out}\n${err}`);
        }
        if (Date.now() > deadline) throw new Error(`serve did not print ${pattern} within ${ms} ms:\n${out}\n${err}`);
        await new Promise<void>((r) => {
          changed = r;
          setTimeout(r, 50);
        });
      }
    },
    async exited(ms = 15_000) {
      const code = await Promise.race([proc.exited, Bun.sleep(ms).then(() => null)]);
      if (code !== null) await done;
      return code;
    },
    async url() {
      const m = await served.until(/listening on (http:\/\/\S+)/);
      return m[1]!;
    },
    kill(signal = "SIGTERM") {
      proc.kill(signal);
    },
  };
  return served;
}

/** An empty working folder and a config file in it; `remove()` deletes it. */
export function tempFolder(config = '[server]\nhost = "127.0.0.1"\n'): { dir: string; config: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), "gw-proc-"));
  const path = join(dir, "gateway.toml");
  writeFileSync(path, config);
  return { dir, config: path, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A free TCP port on loopback (bound and released). */
export function freePort(): number {
  const s = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = s.port!;
  s.stop(true);
  return port;
}

/** A config serving one Messages model ("claude-x") from an anthropic provider at `url`, on loopback. */
export function anthropicConfig(url: string, server: Record<string, string | number> = {}): string {
  const extra = Object.entries(server).map(([k, v]) => `${k} = ${JSON.stringify(v)}\n`).join("");
  return `[server]
host = "127.0.0.1"
${extra}[[providers]]
id = "anthropic"
kind = "anthropic"
base_url = "${url}"
api_key = "sk-upstream"
[[models]]
id = "claude-x"
modalities = ["text"]
endpoints = ["messages"]
pricing = { input = 3.0, output = 15.0 }
routes = [{ provider = "anthropic", model = "claude-x-1" }]
`;
}
