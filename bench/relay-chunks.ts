// `bun bench/relay-chunks.ts`: the gateway's own cost per relayed stream chunk and per open stream
// (issue 17), in process, without sockets: a native Messages stream goes through the relay path as a
// request's would (timedResponse with its clock and size guard, firstEvents, relayStream with the
// native machine) and is read to the end. The 1,000-stream run (`bun run bench --streams`) mixes
// this cost with the upstream's, the probe's and the sockets' on two shared cores; this isolates it.
//
//   bun bench/relay-chunks.ts [--streams 100] [--chunks 2000] [--open 2000] [--rounds 3]
//
// CPU per chunk: `streams` streams of `chunks` text deltas each, read concurrently, process CPU time
// over the deltas relayed. Memory per open stream: `open` streams read to their first delta and left
// waiting on the upstream, heap and RSS after a full GC against before, over `open`.
import { parseArgs } from "node:util";
import { NativeMessagesMachine } from "../src/dialects/native-stream.ts";
import { Cutoff } from "../src/relay/cutoff.ts";
import { firstEvents, relayStream } from "../src/relay/stream.ts";
import { AttemptClock, bodyReader, timedResponse } from "../src/relay/timeouts.ts";
import { SseSizeGuard } from "../src/wire/sse.ts";
import type { RelayCall } from "../src/relay/context.ts";
import type { Attempt } from "../src/relay/routes.ts";
import type { StreamStart } from "../src/relay/stream.ts";

const { values } = parseArgs({
  options: {
    streams: { type: "string", default: "100" },
    chunks: { type: "string", default: "2000" },
    open: { type: "string", default: "2000" },
    rounds: { type: "string", default: "3" },
  },
});

const enc = new TextEncoder();
const START =
  'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],' +
  '"stop_reason":null,"usage":{"input_tokens":12,"output_tokens":1}}}\n\n' +
  'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n';
const DELTA = 'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello, world. "}}\n\n';
const END =
  'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n' +
  'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}\n\n' +
  'event: message_stop\ndata: {"type":"message_stop"}\n\n';

/** An upstream body: the opening, `chunks` deltas (one per read, as a paced upstream sends them), then the end or a wait forever. */
function upstream(chunks: number, then: "end" | "hang"): Response {
  let i = -1;
  const body = new ReadableStream<Uint8Array>({
    async pull(c) {
      if (i === -1) c.enqueue(enc.encode(START));
      else if (i < chunks) c.enqueue(enc.encode(DELTA));
      else if (then === "end") {
        c.enqueue(enc.encode(END));
        c.close();
      } else await new Promise(() => {});
      i++;
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream" } });
}

const call = {
  svc: { cutoff: new Cutoff(), logs: { writeBatched: async () => {} }, commits: {} },
  requestId: "req",
  started: 0,
  log: { endpoint: "messages" },
} as unknown as RelayCall;
const limits = { firstByteMs: 60_000, idleMs: 120_000, totalMs: 900_000 };

/** The client's side of one stream through the relay path; the hold is closed already, so nothing is charged. */
async function open(chunks: number, then: "end" | "hang"): Promise<ReadableStreamDefaultReader<Uint8Array>> {
  const abort = new AbortController();
  const clock = new AttemptClock(abort, limits);
  const response = timedResponse(upstream(chunks, then), clock, new SseSizeGuard());
  const attempt = { route: { key: "r", provider: { id: "p" } }, provider: {}, response, abort, attempts: 1 } as unknown as Attempt;
  const opening = await firstEvents(attempt, "messages");
  const machine = new NativeMessagesMachine({ costOf: () => 0, estimatedInputTokens: 12 });
  const s: StreamStart = {
    call, attempt, opening, machine, hold: { open: false } as StreamStart["hold"], model: {} as StreamStart["model"], estimatedInputTokens: 12, maxOut: 1024, headers: {},
  };
  return relayStream(s).body!.getReader() as ReadableStreamDefaultReader<Uint8Array>;
}

async function drain(r: ReadableStreamDefaultReader<Uint8Array>): Promise<number> {
  let n = 0;
  while (!(await r.read()).done) n++;
  return n;
}

const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

/** What is measured: the upstream body alone (the rig's own share), under the clock, or through the whole relay. */
type Layer = "upstream" | "timed" | "relay";
const layers: Record<Layer, (chunks: number) => Promise<ReadableStreamDefaultReader<Uint8Array>>> = {
  upstream: async (chunks) => upstream(chunks, "end").body!.getReader() as ReadableStreamDefaultReader<Uint8Array>,
  // as the relay reads it
  timed: async (chunks) =>
    bodyReader(timedResponse(upstream(chunks, "end"), new AttemptClock(new AbortController(), limits), new SseSizeGuard())) as ReadableStreamDefaultReader<Uint8Array>,
  relay: (chunks) => open(chunks, "end"),
};

async function cpuPerChunk(layer: Layer, streams: number, chunks: number): Promise<number> {
  const c0 = cpuUs();
  const readers = await Promise.all(Array.from({ length: streams }, () => layers[layer](chunks)));
  await Promise.all(readers.map(drain));
  return (cpuUs() - c0) / (streams * chunks);
}

async function memoryPerStream(n: number): Promise<{ heapKiB: number; rssKiB: number }> {
  Bun.gc(true);
  const m0 = process.memoryUsage();
  const readers: ReadableStreamDefaultReader<Uint8Array>[] = [];
  for (let i = 0; i < n; i++) {
    const r = await open(1, "hang");
    await r.read(); // message_start and content_block_start
    await r.read(); // the one delta
    readers.push(r);
  }
  Bun.gc(true);
  const m1 = process.memoryUsage();
  for (const r of readers) await r.cancel();
  return { heapKiB: (m1.heapUsed - m0.heapUsed) / 1024 / n, rssKiB: (m1.rss - m0.rss) / 1024 / n };
}

const streams = Number(values.streams);
const chunks = Number(values.chunks);
const rounds = Number(values.rounds);
const cpu: Record<Layer, number[]> = { upstream: [], timed: [], relay: [] };
for (const l of Object.keys(cpu) as Layer[]) await cpuPerChunk(l, 10, 500); // warm-up
// Interleaved, so a neighbour's load on the shared machine falls on every layer alike.
for (let i = 0; i < rounds; i++) for (const l of Object.keys(cpu) as Layer[]) cpu[l].push(await cpuPerChunk(l, streams, chunks));
const mid = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`CPU per chunk, median of ${rounds} (${streams} streams × ${chunks} deltas), µs:`);
for (const l of Object.keys(cpu) as Layer[]) console.log(`  ${l.padEnd(8)} ${mid(cpu[l]).toFixed(2)}  (${cpu[l].map((x) => x.toFixed(2)).join(", ")})`);
console.log(`  relay's own share (relay − upstream): ${(mid(cpu.relay) - mid(cpu.upstream)).toFixed(2)} µs`);
const mem = await memoryPerStream(Number(values.open));
console.log(`memory per open stream: heap ${mem.heapKiB.toFixed(1)} KiB, RSS ${mem.rssKiB.toFixed(1)} KiB (${values.open} streams)`);
process.exit(0);
