// The benchmark's rig (mock upstream, bare proxy, gateway with a key), started and left running for
// probing by hand: `perf record -p`, `strace -c -p`, wrk with bench/wrk/post.lua. Prints one JSON line
// (pids, ports, key, body files); Ctrl-C stops every process.
//
//   bun bench/rig-hold.ts
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { installCleanup } from "./lib/procs.ts";
import { startRig } from "./lib/rig.ts";

installCleanup();
const rig = await startRig({ dir: mkdtempSync(join(tmpdir(), "gw-rig-")), paceMs: 20, withProxy: true });
console.log(
  JSON.stringify({
    key: rig.key,
    gateway: { pid: rig.gateway.pid, port: rig.gateway.info.port },
    proxy: { pid: rig.proxy!.pid, port: rig.proxy!.info.buffered },
    bodies: { chat: rig.bodyFile("chat-json"), messages: rig.bodyFile("messages-json") },
  }),
);
await new Promise(() => {});
