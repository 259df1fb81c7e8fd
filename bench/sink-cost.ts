// `bun bench/sink-cost.ts`: what Bun.serve costs per relayed chunk depending on how a stream's body
// is handed to it (issue 17). A relay process reads a paced upstream with fetch and answers with:
// - native: the fetch body itself (what the bare proxy does: no JavaScript per chunk);
// - default: a ReadableStream whose pull reads the upstream and enqueues (what relayStream does);
// - direct: Bun's `type: "direct"` stream, which writes each chunk into the response sink and flushes.
// The relay's CPU (utime+stime from /proc) over the chunks received and its RSS per open stream, the
// three modes interleaved.
//
//   bun bench/sink-cost.ts [--streams 500] [--chunks 100] [--pace-ms 20] [--rounds 2]
import { parseArgs } from "node:util";
import { cpuSeconds, rssMiB } from "./lib/procs.ts";

const MODES = ["native", "default", "direct"] as const;
type Mode = (typeof MODES)[number];

if (process.argv[2] === "--serve") {
  const [, , , mode, upstream] = process.argv as [string, string, string, Mode, string];
  const server = Bun.serve({
    port: 0,
    idleTimeout: 0,
    async fetch() {
      const res = await fetch(upstream);
      if (mode === "native") return new Response(res.body, { headers: { "content-type": "text/event-stream" } });
      const reader = res.body!.getReader();
      const body =
        mode === "default"
          ? new ReadableStream<Uint8Array>({
              async pull(c) {
                const r = await reader.read();
                if (r.done) c.close();
                else c.enqueue(r.value);
              },
            })
          : new ReadableStream({
              type: "direct",
              async pull(c) {
                for (let r = await reader.read(); !r.done; r = await reader.read()) {
                  await c.write(r.value);
                  await c.flush();
                }
                c.close();
              },
            });
      return new Response(body, { headers: { "content-type": "text/event-stream" } });
    },
  });
  console.log(server.port);
} else {
  const { values } = parseArgs({
    options: {
      streams: { type: "string", default: "500" },
      chunks: { type: "string", default: "100" },
      "pace-ms": { type: "string", default: "20" },
      rounds: { type: "string", default: "2" },
    },
  });
  const streams = Number(values.streams);
  const chunks = Number(values.chunks);
  const pace = Number(values["pace-ms"]);
  const delta = new TextEncoder().encode(
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello, world. "}}\n\n',
  );
  const upstream = Bun.serve({
    port: 0,
    idleTimeout: 0,
    fetch() {
      let i = 0;
      const body = new ReadableStream({
        type: "direct",
        async pull(c) {
          for (; i < chunks; i++) {
            await c.write(delta);
            await c.flush();
            await Bun.sleep(pace);
          }
          c.close();
        },
      });
      return new Response(body, { headers: { "content-type": "text/event-stream" } });
    },
  });

  /** The port a relay prints once it listens. */
  const firstLine = async (stream: ReadableStream<Uint8Array>) => {
    const reader = stream.getReader();
    let text = "";
    while (!text.includes("\n")) text += new TextDecoder().decode((await reader.read()).value);
    reader.releaseLock();
    return Number(text.trim());
  };
  const relays = await Promise.all(
    MODES.map(async (mode) => {
      const proc = Bun.spawn(["bun", import.meta.path, "--serve", mode, `http://127.0.0.1:${upstream.port}/`], {
        stdout: "pipe",
        env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: "4096" },
      });
      return { mode, proc, port: await firstLine(proc.stdout) };
    }),
  );
  const decoder = new TextDecoder();
  /** `streams` clients at once, each reading one stream to its end; the chunks received. */
  const load = async (port: number) => {
    let received = 0;
    await Promise.all(
      Array.from({ length: streams }, async () => {
        const res = await fetch(`http://127.0.0.1:${port}/`);
        const reader = res.body!.getReader();
        for (let r = await reader.read(); !r.done; r = await reader.read()) received += decoder.decode(r.value).split("\n\n").length - 1;
      }),
    );
    return received;
  };
  const perChunk: Record<Mode, number[]> = { native: [], default: [], direct: [] };
  const perStream: Record<Mode, number[]> = { native: [], default: [], direct: [] };
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const r of round % 2 ? [...relays].reverse() : relays) {
      await Bun.sleep(500);
      const idle = rssMiB(r.proc.pid);
      const c0 = cpuSeconds(r.proc.pid);
      // Half way through the streams' length, every stream is open.
      const mid = Bun.sleep((chunks * pace) / 2).then(() => rssMiB(r.proc.pid));
      const n = await load(r.port);
      if (n !== streams * chunks) throw new Error(`${r.mode}: ${n} chunks, expected ${streams * chunks}`);
      perChunk[r.mode].push(((cpuSeconds(r.proc.pid) - c0) * 1e6) / n);
      perStream[r.mode].push((((await mid) - idle) * 1024) / streams);
    }
  }
  console.log(`relay CPU per chunk, µs (${streams} streams × ${chunks} chunks ${pace} ms apart, ${values.rounds} rounds interleaved):`);
  for (const m of MODES) console.log(`  ${m.padEnd(8)} ${perChunk[m].map((x) => x.toFixed(2)).join(", ")}`);
  console.log("relay RSS per open stream, KiB (half way through, over its RSS before the load):");
  for (const m of MODES) console.log(`  ${m.padEnd(8)} ${perStream[m].map((x) => x.toFixed(1)).join(", ")}`);
  for (const r of relays) r.proc.kill();
  upstream.stop(true);
}
