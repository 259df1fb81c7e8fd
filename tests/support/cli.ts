import { expect } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// The CLI as an operator runs it: `bun src/cli/main.ts …` in a child process, against a temporary
// database. Nothing here reaches into the gateway's modules.

export const ROOT = join(import.meta.dir, "../..");
const MAIN = join(ROOT, "src/cli/main.ts");

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** The environment of a child: this one's, minus what would point it at another installation. */
function childEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== "GATEWAY_CONFIG" && k !== "PORT") env[k] = v;
  return { ...env, ...extra };
}

/** Runs one `gateway …` command to its end. */
export async function gateway(args: string[], opts: { env?: Record<string, string> } = {}): Promise<CliResult> {
  const proc = Bun.spawn(["bun", MAIN, ...args], { cwd: ROOT, env: childEnv(opts.env ?? {}), stdout: "pipe", stderr: "pipe" });
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
 * A temporary directory with a database path and a config file that binds the server to loopback
 * (the default host is 0.0.0.0); `remove()` deletes them all.
 */
export function tempInstallation(): { dir: string; db: string; config: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), "gw-cli-"));
  const config = join(dir, "gateway.toml");
  writeFileSync(config, '[server]\nhost = "127.0.0.1"\n');
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
  const proc = Bun.spawn(["bun", MAIN, "serve", ...args], { cwd: ROOT, env: childEnv({}), stdout: "pipe", stderr: "inherit" });
  const reader = proc.stdout.getReader();
  const decoder = new TextDecoder();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) {
      await proc.exited;
      throw new Error(`gateway serve exited ${proc.exitCode} before printing: ${text}`);
    }
    text += decoder.decode(value, { stream: true });
  }
  return {
    pid: proc.pid,
    firstLine: text.slice(0, text.indexOf("\n")),
    async until(pattern) {
      while (!pattern.test(text)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`gateway serve ended without printing ${pattern}: ${text}`);
        text += decoder.decode(value, { stream: true });
      }
      return text;
    },
    async stop() {
      proc.kill("SIGTERM");
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
      }
      await proc.exited;
      return text;
    },
  };
}
