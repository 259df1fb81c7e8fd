// `bun run bench --streams`: many open streams paced like an LLM (issue 17). The paced upstream sends
// a text delta every paceMs, each stamped with its send time; the probe holds `streams` connections,
// each running one stream after another for the duration, and reports the per-chunk latency
// (receive − send). The bare proxy runs the same load first, then the gateway; added = gateway − bare.
// The gateway's RSS is read idle, every second during its run, and after it.
import { runProbe, type ProbeResult } from "./load.ts";
import { cpuSeconds, rssMiB, stopChild } from "./procs.ts";
import { logCheck, reconciliationLine } from "./report.ts";
import { heldNano, reconcile, smokeTest, startRig, type Target } from "./rig.ts";
import { median } from "./stats.ts";
import { profileMarkdown, summariseProfile } from "./cpuprofile.ts";
import { join } from "node:path";

export interface StreamsOptions {
  dir: string;
  env: string;
  paceMs: number;
  streams: number;
  seconds: number;
  /** text deltas per answer: each stream lasts about chunks × paceMs */
  chunks: number;
  quick: boolean;
  /** `--streams --profile`: the gateway runs under `bun --cpu-prof`, its profile summarised after the report */
  profileDir?: string;
}

export interface StreamsOutcome {
  md: string;
  ok: boolean;
}

export async function streamsRun(o: StreamsOptions): Promise<StreamsOutcome> {
  console.log(`${o.env}\nmany streams: ${o.streams} at once for ${o.seconds} s, a text delta every ${o.paceMs} ms, ${o.chunks} per stream`);
  const profName = "gateway-streams.cpuprofile";
  const gatewayBunFlags = o.profileDir ? ["--cpu-prof", `--cpu-prof-dir=${o.profileDir}`, `--cpu-prof-name=${profName}`, "--cpu-prof-interval=200"] : undefined;
  const rig = await startRig({ dir: o.dir, paceMs: o.paceMs, withProxy: true, pacedChunks: o.chunks, gatewayBunFlags });
  const gw = rig.targets.find((t) => t.id === "gateway")!;
  const bare = rig.targets.find((t) => t.id === "proxy-buffered")!;
  await smokeTest(rig, gw);
  const body = rig.bodyFile("messages-sse", true);

  const run = async (t: Target): Promise<{ r: ProbeResult; hits: number; cpuUsPerChunk: number }> => {
    const h0 = (await rig.upstreamHits()).paced;
    const cpu0 = cpuSeconds(t.pid);
    // Started over one stream's length, so chunks of different streams do not arrive in lockstep.
    const r = await runProbe(t.pacedPort, rig.key, body, o.streams, o.seconds, ["--lags", "--ramp-ms", String(o.chunks * o.paceMs)]);
    const cpuUsPerChunk = ((cpuSeconds(t.pid) - cpu0) * 1e6) / (r.lag_n ?? NaN);
    await Bun.sleep(250);
    return { r, hits: (await rig.upstreamHits()).paced - h0, cpuUsPerChunk };
  };

  // The bare proxy's RSS too: what Bun itself holds per open stream (sockets, fetch), against the gateway's.
  const bareIdle = rssMiB(bare.pid);
  console.log("bare proxy…");
  const bareRss: number[] = [];
  const bareTimer = setInterval(() => bareRss.push(rssMiB(bare.pid)), 1000);
  const b = await run(bare);
  clearInterval(bareTimer);
  await Bun.sleep(2000);
  const idle = rssMiB(gw.pid);
  console.log(`gateway (idle RSS ${idle.toFixed(1)} MiB)…`);
  const rss: number[] = [];
  const timer = setInterval(() => rss.push(rssMiB(gw.pid)), 1000);
  const g = await run(gw);
  clearInterval(timer);
  // A minute: long enough for the allocator to hand back what the streams used.
  const settleS = o.quick ? 3 : 60;
  await Bun.sleep(settleS * 1000);
  const after = rssMiB(gw.pid);
  const held = await heldNano(rig);
  await stopChild(rig.gateway.proc, o.profileDir ? 20_000 : 5000);
  const rec = reconcile(rig.dbFile, held);
  // The smoke test's requests went to the fast upstream, one log row each.
  const logs = logCheck(rec, g.hits + (await rig.upstreamHits()).fast, 0);

  // While every stream is open: the middle half of the run, away from the ramp-up and the drain.
  const during = median(rss.slice(Math.floor(rss.length / 4), Math.ceil((rss.length * 3) / 4)));
  const max = Math.max(...rss);
  const perStreamKiB = ((during - idle) * 1024) / o.streams;
  const bareDuring = median(bareRss.slice(Math.floor(bareRss.length / 4), Math.ceil((bareRss.length * 3) / 4)));
  const barePerStreamKiB = ((bareDuring - bareIdle) * 1024) / o.streams;
  const added = (g.r.lag_p99_ms ?? NaN) - (b.r.lag_p99_ms ?? NaN);
  const back = Math.abs(after - idle) / idle;
  const errors = b.r.errors + g.r.errors;
  const hitsOk = g.hits === g.r.sent && b.hits === b.r.sent;
  const verdict = (pass: boolean) => (pass ? "PASS" : "**MISS**");
  const line = (name: string, x: { r: ProbeResult; hits: number; cpuUsPerChunk: number }) =>
    `| ${name} | ${x.r.sent.toLocaleString("en-US")} | ${x.r.errors} | ${(x.r.lag_n ?? 0).toLocaleString("en-US")} | ${(x.r.lag_p50_ms ?? NaN).toFixed(3)} | ${(x.r.lag_p99_ms ?? NaN).toFixed(3)} | ${(x.r.ttfb_p50_us / 1000).toFixed(2)} | ${x.cpuUsPerChunk.toFixed(2)} |`;
  const md = [
    `# Many open streams${o.quick ? " (quick)" : ""}`,
    "",
    `${new Date().toISOString()} — ${o.env}. ${o.streams} connections, each running stream after stream of ${o.chunks} text deltas ` +
      `${o.paceMs} ms apart (Messages, native route) for ${o.seconds} s, the connections' first streams spread over one stream's length; ` +
      "the bare proxy first, then the gateway.",
    "Chunk latency: the paced upstream's send stamp to the probe's receive time, every chunk. CPU per chunk: the server process's utime+stime over its run, over the chunks the probe received.",
    "",
    "| target | streams | errors | chunks | chunk latency p50 ms | p99 ms | TTFB p50 ms | CPU µs per chunk |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
    line("proxy-buffered", b),
    line("gateway", g),
    "",
    "| target | measured | |",
    "|---|---|---|",
    `| no errors | ${errors} | ${verdict(errors === 0)} |`,
    `| per-chunk added latency p99 ≤ 5 ms | ${added >= 0 ? "+" : ""}${added.toFixed(3)} ms | ${verdict(added <= 5)} |`,
    `| gateway RSS ≤ 200 MiB | idle ${idle.toFixed(1)}, during ${during.toFixed(1)} (max ${max.toFixed(1)}) MiB | ${verdict(max <= 200)} |`,
    `| RSS back within 10% of idle after the run (${settleS} s later) | ${after.toFixed(1)} MiB (${back >= 0 ? "+" : ""}${((after / idle - 1) * 100).toFixed(1)}%) | ${verdict(back <= 0.1)} |`,
    "",
    `Memory per open stream: ${perStreamKiB.toFixed(1)} KiB ((during − idle) / ${o.streams}); the bare proxy's: ${barePerStreamKiB.toFixed(1)} KiB ` +
      `(idle ${bareIdle.toFixed(1)}, during ${bareDuring.toFixed(1)} MiB; it serves the buffered and streamed listeners in one process).`,
    `RSS curve (MiB, every ${o.quick ? 2 : 10} s): ${rss.filter((_, i) => i % (o.quick ? 2 : 10) === 0).map((x) => x.toFixed(0)).join(", ")}.`,
    `Checks: upstream hits ${hitsOk ? "match" : "**do not match**"} streams (bare ${b.hits} / ${b.r.sent}, gateway ${g.hits} / ${g.r.sent}).`,
    reconciliationLine(rec),
    logs.text,
    "",
    ...(o.profileDir ? ["## The gateway's profile over the whole process", "", profileMarkdown(summariseProfile(join(o.profileDir, profName))), ""] : []),
  ].join("\n");
  const ok = errors === 0 && hitsOk && rec.ok && logs.ok;
  return { md, ok };
}
