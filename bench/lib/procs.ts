// Child processes of the benchmark and what /proc says about them. Every process started here is
// tracked and stopped by stopAll(), which run.ts calls on success, failure and Ctrl-C alike.
import type { Subprocess } from "bun";
import { readFileSync } from "node:fs";

export interface Child<Info = Record<string, unknown>> {
  name: string;
  proc: Subprocess<"ignore", "pipe", "pipe">;
  pid: number;
  /** The first JSON line the child printed (its ports). */
  info: Info;
  /** The last output lines, for error messages. */
  tail(): string;
}

const live = new Set<Subprocess>();

/** Keeps the last few KiB of a stream and never lets a chatty child block on a full pipe. */
function drain(stream: ReadableStream<Uint8Array>, sink: { text: string }, onLine?: (line: string) => void): void {
  const decoder = new TextDecoder();
  let partial = "";
  (async () => {
    for await (const chunk of stream) {
      const text = decoder.decode(chunk, { stream: true });
      sink.text = (sink.text + text).slice(-8192);
      if (onLine) {
        partial += text;
        let nl: number;
        while ((nl = partial.indexOf("\n")) !== -1) {
          onLine(partial.slice(0, nl));
          partial = partial.slice(nl + 1);
        }
      }
    }
  })().catch(() => {});
}

/** Starts `cmd` and waits for its first JSON line on stdout. */
export async function startChild<Info = Record<string, unknown>>(
  name: string,
  cmd: string[],
  opts: { cwd?: string; env?: Record<string, string | undefined>; timeoutMs?: number } = {},
): Promise<Child<Info>> {
  const proc = Bun.spawn(cmd, { cwd: opts.cwd, env: opts.env ?? process.env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  live.add(proc);
  proc.exited.then(() => live.delete(proc));
  const out = { text: "" };
  const err = { text: "" };
  const { promise, resolve, reject } = Promise.withResolvers<Info>();
  drain(proc.stdout, out, (line) => {
    if (!line.startsWith("{")) return;
    try {
      resolve(JSON.parse(line) as Info);
    } catch {}
  });
  drain(proc.stderr, err);
  const tail = () => `${out.text.slice(-2000)}${err.text.slice(-2000)}`.trim();
  const timer = setTimeout(() => reject(new Error(`${name} printed no JSON line within ${opts.timeoutMs ?? 20000} ms:\n${tail()}`)), opts.timeoutMs ?? 20000);
  proc.exited.then((code) => reject(new Error(`${name} exited with ${code} before it was ready:\n${tail()}`)));
  try {
    const info = await promise;
    return { name, proc, pid: proc.pid, info, tail };
  } finally {
    clearTimeout(timer);
  }
}

/** Starts a server that prints no JSON line (another gateway) and waits until `ready` resolves true. */
export async function startServer(
  name: string,
  cmd: string[],
  ready: () => Promise<boolean>,
  opts: { cwd?: string; env?: Record<string, string | undefined>; timeoutMs?: number } = {},
): Promise<Subprocess<"ignore", "pipe", "pipe">> {
  const proc = Bun.spawn(cmd, { cwd: opts.cwd, env: opts.env ?? process.env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  live.add(proc);
  proc.exited.then(() => live.delete(proc));
  const out = { text: "" };
  drain(proc.stdout, out);
  drain(proc.stderr, out);
  const until = performance.now() + (opts.timeoutMs ?? 30_000);
  while (!(await ready().catch(() => false))) {
    if (proc.exitCode !== null) throw new Error(`${name} exited with ${proc.exitCode} before it was ready:\n${out.text.slice(-2000)}`);
    if (performance.now() > until) throw new Error(`${name} was not ready within ${opts.timeoutMs ?? 30_000} ms:\n${out.text.slice(-2000)}`);
    await Bun.sleep(100);
  }
  return proc;
}

/** Runs a command to its end and returns its stdout; throws with its output when it fails. */
export async function runToEnd(name: string, cmd: string[], opts: { cwd?: string; env?: Record<string, string | undefined> } = {}): Promise<string> {
  const proc = Bun.spawn(cmd, { cwd: opts.cwd, env: opts.env ?? process.env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  live.add(proc);
  try {
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    if (code !== 0) throw new Error(`${name} exited with ${code}:\n${out.slice(-2000)}${err.slice(-2000)}`);
    return out;
  } finally {
    live.delete(proc);
  }
}

/** SIGTERM, then SIGKILL after graceMs. */
export async function stopChild(proc: Subprocess, graceMs = 5000): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  proc.kill("SIGTERM");
  const killed = await Promise.race([proc.exited.then(() => false), Bun.sleep(graceMs).then(() => true)]);
  if (killed) {
    proc.kill("SIGKILL");
    await proc.exited;
  }
}

export async function stopAll(): Promise<void> {
  await Promise.all([...live].map((p) => stopChild(p)));
}

let stopping = false;
/** Ctrl-C, SIGTERM or an uncaught error: stop every child before leaving. */
export function installCleanup(): void {
  const bail = (code: number) => async () => {
    if (stopping) return;
    stopping = true;
    await stopAll();
    process.exit(code);
  };
  process.on("SIGINT", bail(130));
  process.on("SIGTERM", bail(143));
  process.on("uncaughtException", (e) => {
    console.error(e);
    void bail(1)();
  });
  process.on("unhandledRejection", (e) => {
    console.error(e);
    void bail(1)();
  });
}

export const CLK_TCK = Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim()) || 100;

/** utime + stime of a process (all its threads), in seconds. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

/** Resident set size in MiB (VmRSS). */
export function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const m = /VmRSS:\s+(\d+) kB/.exec(status);
  if (!m) throw new Error(`no VmRSS for ${pid}`);
  return Number(m[1]) / 1024;
}
