import { RedisClient } from "bun";
import { freePort } from "./cli.ts";

/** A throwaway redis-server on a free loopback port, nothing written to disk. */
export interface TestRedis {
  url: string;
  port: number;
  /** Stops it (SIGKILL: an outage, not a shutdown); `start` brings it back empty on the same port (if stopped). */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Freezes it (SIGSTOP): connected, answering nothing, as an overloaded store; `resume` thaws it. */
  pause(): void;
  resume(): void;
  /** One command, for looking at what the gateway stored. */
  send(command: string, ...args: string[]): Promise<unknown>;
}

const BINARY = Bun.which("redis-server");

/**
 * Starts one. Without redis-server on PATH the suite fails with how to get it (CI installs Debian's
 * package): the shared rate limits are never silently left untested.
 */
export async function startTestRedis(): Promise<TestRedis> {
  if (!BINARY) throw new Error("redis-server is not installed: `apt-get install redis-server` (Debian's package; .ci/run installs it)");
  const port = freePort();
  let proc: ReturnType<typeof Bun.spawn> | null = null;
  const start = async () => {
    if (proc) return;
    proc = Bun.spawn([BINARY, "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], {
      stdout: "pipe",
      stderr: "ignore",
    });
    try {
      await ready(proc, port);
    } catch (e) {
      proc = null;
      throw e;
    }
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    start,
    async stop() {
      if (!proc) return;
      proc.kill("SIGKILL");
      await proc.exited;
      proc = null;
    },
    pause: () => proc?.kill("SIGSTOP"),
    resume: () => proc?.kill("SIGCONT"),
    async send(command, ...args) {
      const client = new RedisClient(`redis://127.0.0.1:${port}`);
      try {
        return await client.send(command, args);
      } finally {
        client.close();
      }
    },
  };
}

// Redis prints this line once it accepts connections; exiting first means the port was taken.
async function ready(proc: ReturnType<typeof Bun.spawn>, port: number): Promise<void> {
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let seen = "";
  const deadline = setTimeout(() => proc.kill("SIGKILL"), 10_000);
  try {
    while (!seen.includes("Ready to accept connections")) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`redis-server on port ${port} did not start: ${seen.slice(-500)}`);
      seen += decoder.decode(value, { stream: true });
    }
  } finally {
    clearTimeout(deadline);
  }
  // Its later lines are read and dropped, so that a full pipe never stalls it.
  void (async () => {
    while (!(await reader.read()).done);
  })();
}
