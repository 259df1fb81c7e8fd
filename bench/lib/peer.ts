// Another gateway in the same run, for comparison (`bun run bench --peer portkey`): Portkey's
// open-source gateway from npm, on Node, in front of the same mock upstream. It is told where to
// send each request by its routing headers (provider and custom host), which the load generators
// add; everything else about the cells is the same as for our gateway.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { runToEnd, startServer } from "./procs.ts";
import { ROOT, WORKLOADS, type Target, type WorkloadId } from "./rig.ts";

export const PORTKEY_VERSION = "1.15.2";
const DIR = join(ROOT, "bench", "out", "peers", "portkey");
const MAIN = join(DIR, "node_modules", "@portkey-ai", "gateway", "build", "start-server.js");

/** Installs @portkey-ai/gateway once into bench/out/peers (npm registry). */
async function install(): Promise<void> {
  if (existsSync(MAIN)) return;
  mkdirSync(DIR, { recursive: true });
  writeFileSync(
    join(DIR, "package.json"),
    JSON.stringify({
      name: "bench-peer-portkey",
      private: true,
      dependencies: { "@portkey-ai/gateway": PORTKEY_VERSION },
      // Its streaming needs @hono/node-server 1.13.x (later versions break SSE pass-through).
      overrides: { "@hono/node-server": "1.13.8" },
    }),
  );
  console.log(`installing @portkey-ai/gateway ${PORTKEY_VERSION} into ${DIR} (npm)…`);
  try {
    await runToEnd("npm install", ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: DIR });
  } catch (e) {
    const why = String((e as Error).message ?? e).split("\n").find((l) => l.trim() !== "") ?? "";
    throw new Error(`--peer portkey: @portkey-ai/gateway ${PORTKEY_VERSION} could not be installed from npm (no registry offline?): ${why.slice(0, 200)}. Run without --peer.`);
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Portkey on Node in front of `upstreamUrl`; the target carries its routing headers per workload. */
export async function startPortkey(upstreamUrl: string): Promise<Target> {
  if (Bun.spawnSync(["sh", "-c", "command -v node && command -v npm"]).exitCode !== 0) {
    throw new Error("--peer portkey needs Node.js and npm on PATH (Portkey's gateway runs on Node)");
  }
  await install();
  const port = await freePort();
  const proc = await startServer(
    "portkey",
    ["node", MAIN, `--port=${port}`, "--headless"],
    async () => (await fetch(`http://127.0.0.1:${port}/`)).status > 0,
    { cwd: DIR, env: { ...process.env, NODE_ENV: "production" } },
  );
  const provider = (w: WorkloadId) => (WORKLOADS.find((x) => x.id === w)!.path === "/v1/messages" ? "anthropic" : "openai");
  return {
    id: "portkey",
    pid: proc.pid,
    port,
    pacedPort: port,
    headers: (w) => ({ "x-portkey-provider": provider(w), "x-portkey-custom-host": `${upstreamUrl}/v1` }),
  };
}
