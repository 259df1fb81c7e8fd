import { expect } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// The CLI as an operator runs it: `bun src/cli/main.ts …` in a child process (a command to its end, or
// `gateway serve` with signals from outside), against a temporary folder. Nothing here reaches into
// the gateway's modules.

export const ROOT = join(import.meta.dir, "../..");
export const MAIN = join(ROOT, "src/cli/main.ts");
const LOOPBACK = '[server]\nhost = "127.0.0.1"\n';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** The environment of a child: this one's, minus what would point it at another installation. */
function childEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !["GATEWAY_CONFIG", "GATEWAY_DB", "PORT"].includes(k)) env[k] = v;
  return { ...env, ...extra };
}

/** Runs one `gateway …` command to its end. */
export async function gateway(args: string[], opts: { env?: Record<string, string>; stdin?: string } = {}): Promise<CliResult> {
  const stdin = opts.stdin === undefined ? "ignore" : new Blob([opts.stdin]);
  const proc = Bun.spawn(["bun", MAIN, ...args], { cwd: ROOT, env: childEnv(opts.env ?? {}), stdin, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

/** Runs `gateway … --json`, expects success and returns the parsed document. */
export async function gatewayJson<T = Record<string, unknown>>(args: string[]): Promise<T> {
  const r = await gateway([...args, "--json"]);
  if (r.code !== 0) throw new Error(`gateway ${args.join(" ")} exited ${r.code}: ${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

/** DESIGN: bad input exits non-zero with a one-line reason on stderr. Returns that line. */
export function expectOneLineFailure(r: CliResult): string {
  expect(r.code).not.toBe(0);
  const lines = r.stderr.trimEnd().split("\n");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toStartWith("gateway: ");
  return lines[0]!;
}

/**
 * A temporary directory with a database path and a config file, by default one that binds the server
 * to loopback (the default host is 0.0.0.0); `remove()` deletes them all.
 */
export function tempInstallation(text = LOOPBACK): { dir: string; db: string; config: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), "gw-cli-"));
  const config = join(dir, "gateway.toml");
  writeFileSync(config, text);
  return { dir, db: join(dir, "gateway.db"), config, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface ServeProcess {
  pid: number;
  /** The first line `serve` printed (the listening line, or the --json document). */
  firstLine: string;
  /** Reads on until what it printed matches `pattern`; returns all of it. */
  until(pattern: RegExp): Promise<string>;
  /** Stops the server (SIGTERM, its own clean stop) and returns everything it printed. */
  stop(): Promise<string>;
}

/** `gateway serve …` in its own process; resolves once it has printed its first line. */
export async function serve(args: string[]): Promise<ServeProcess> {
  const s = startServe(args, { cwd: ROOT });
  await s.until(/\n/, 60_000);
  return {
    pid: s.proc.pid,
    firstLine: s.out.slice(0, s.out.indexOf("\n")),
    async until(pattern) {
      await s.until(pattern, 60_000);
      return s.out;
    },
    async stop() {
      s.kill("SIGTERM");
      await s.exited(60_000);
      return s.out;
    },
  };
}

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
