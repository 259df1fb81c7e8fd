// `bun bench/ab-streams.ts --base REV`: the many-open-streams cell (bench/lib/streams.ts) for this
// tree's gateway and another revision's, interleaved, so that a change worth a microsecond per chunk
// or a few MiB is not compared across runs a neighbour's load moved (bench/RESULTS.md).
//
//   bun bench/ab-streams.ts --base HEAD~1 [--streams 1000] [--seconds 20] [--chunks 100] [--rounds 2] [--settle 10]
//                           [--body agent-messages-sse] (the streams' request: a workload's body, messages-sse by default)
//
// Each side has its own paced upstream, database and key; runs alternate A B B A … Per run: the
// gateway's CPU per chunk, chunk latency p99, RSS before (idle), in the middle half of the run and
// `--settle` seconds after it; the medians over the rounds.
import { join } from "node:path";
import { parseArgs } from "node:util";
import { checkoutBase } from "./lib/base-tree.ts";
import { runProbe } from "./lib/load.ts";
import { cpuSeconds, installCleanup, rssMiB, stopAll } from "./lib/procs.ts";
import { smokeTest, startRig, type Rig, type WorkloadId } from "./lib/rig.ts";
import { median } from "./lib/stats.ts";

const { values } = parseArgs({
  options: {
    base: { type: "string", default: "HEAD" },
    streams: { type: "string", default: "1000" },
    seconds: { type: "string", default: "20" },
    chunks: { type: "string", default: "100" },
    "pace-ms": { type: "string", default: "20" },
    rounds: { type: "string", default: "2" },
    settle: { type: "string", default: "10" },
    body: { type: "string", default: "messages-sse" },
  },
});
const [streams, seconds, chunks, paceMs, rounds, settle] = ["streams", "seconds", "chunks", "pace-ms", "rounds", "settle"].map((k) => Number(values[k as keyof typeof values]));

interface Run {
  cpuUsPerChunk: number;
  p99: number;
  idle: number;
  during: number;
  max: number;
  after: number;
  errors: number;
}

async function once(rig: Rig): Promise<Run> {
  const gw = rig.targets.find((t) => t.id === "gateway")!;
  const idle = rssMiB(gw.pid);
  const rss: number[] = [];
  const timer = setInterval(() => rss.push(rssMiB(gw.pid)), 1000);
  const cpu0 = cpuSeconds(gw.pid);
  const r = await runProbe(gw.pacedPort, rig.key, rig.bodyFile(values.body as WorkloadId, true), streams!, seconds!, ["--lags", "--ramp-ms", String(chunks! * paceMs!)]);
  const cpuUsPerChunk = ((cpuSeconds(gw.pid) - cpu0) * 1e6) / (r.lag_n ?? NaN);
  clearInterval(timer);
  await Bun.sleep(settle! * 1000);
  const during = median(rss.slice(Math.floor(rss.length / 4), Math.ceil((rss.length * 3) / 4)));
  return { cpuUsPerChunk, p99: r.lag_p99_ms ?? NaN, idle, during, max: Math.max(...rss), after: rssMiB(gw.pid), errors: r.errors };
}

installCleanup();
const base = checkoutBase(values.base!);
try {
  const sides: { name: string; rig: Rig; runs: Run[] }[] = [
    { name: "this tree", rig: await startRig({ dir: join(base.dir, "a"), paceMs: paceMs!, withProxy: false, pacedChunks: chunks }), runs: [] },
    { name: `base ${base.rev}`, rig: await startRig({ dir: join(base.dir, "b"), paceMs: paceMs!, withProxy: false, pacedChunks: chunks, gatewayRoot: base.root }), runs: [] },
  ];
  for (const s of sides) await smokeTest(s.rig, s.rig.targets[0]!);
  for (let round = 1; round <= rounds!; round++) {
    for (const s of round % 2 ? sides : [...sides].reverse()) {
      const x = await once(s.rig);
      if (x.errors) throw new Error(`${s.name}: ${x.errors} errors`);
      s.runs.push(x);
      console.log(`[round ${round}] ${s.name.padEnd(14)} ${x.cpuUsPerChunk.toFixed(2)} µs/chunk  p99 ${x.p99.toFixed(1)} ms  RSS idle ${x.idle.toFixed(0)} during ${x.during.toFixed(0)} max ${x.max.toFixed(0)} after ${x.after.toFixed(0)} MiB`);
    }
  }
  const rows = ["| side | CPU µs/chunk | chunk p99 ms | RSS idle | during | max | after (MiB) | per stream KiB |", "|---|---:|---:|---:|---:|---:|---:|---:|"];
  for (const s of sides) {
    const m = (f: (x: Run) => number) => median(s.runs.map(f));
    rows.push(
      `| ${s.name} | ${m((x) => x.cpuUsPerChunk).toFixed(2)} | ${m((x) => x.p99).toFixed(1)} | ${m((x) => x.idle).toFixed(1)} | ${m((x) => x.during).toFixed(1)} | ${m((x) => x.max).toFixed(1)} | ${m((x) => x.after).toFixed(1)} | ${m((x) => ((x.during - x.idle) * 1024) / streams!).toFixed(1)} |`,
    );
  }
  console.log(`\n${streams} streams of ${chunks} deltas ${paceMs} ms apart for ${seconds} s, medians of ${rounds} interleaved runs, RSS after = ${settle} s later:\n\n${rows.join("\n")}`);
} finally {
  await stopAll();
  base.remove();
}
