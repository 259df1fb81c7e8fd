// `bun run bench`: the gateway's overhead against the physical limit, in one run.
//
//   bun run bench                 full matrix: 10 s cells, 2 rounds (about 15 minutes)
//   bun run bench --quick         2 s cells, for development
//   bun run bench --memory        2 minutes at c=64, the gateway's RSS after 20 s and at the end
//   bun run bench --profile       the gateway under --cpu-prof at c=16 (JSON, then SSE, or --workloads) + SQLite timings
//                                 (with --postgres: the gateway serving from PostgreSQL instead)
//   bun run bench --peer portkey  the same cells for Portkey's gateway from npm (on Node), side by side
//   bun run bench --streams       1,000 streams at once paced like an LLM for 2 minutes (--quick: 20 s):
//                                 per-chunk added latency, the gateway's RSS idle, during and after
//                                 (with --profile: the gateway under --cpu-prof, its profile after the report)
//   bun run bench --postgres      also the gateway serving from PostgreSQL (a throwaway server from Debian's
//                                 binaries, the installation copied with migrate-db), cell by cell beside SQLite
//   options: --rounds N, --seconds S, --pace-ms MS, --workloads chat-json,…, --conc 1,16,64, --keep (temp dir),
//            --agent-kb 300 (size of the agent turns, 100 KiB by default), --stream-count N (--streams: 1000)
//
// Workloads: chat-json, messages-json, chat-sse, messages-sse (a 500-byte conversation), and the agent
// turns of issue 17, each -json and -sse: agent-messages (Messages on an Anthropic route), agent-m2c
// (Messages on an OpenAI-kind route, translated), agent-chat (a Codex-like Chat body), agent-responses
// (the same turn on /v1/responses). Agent turns run at c=1 and c=16 only. Each cell also reports one
// JSON.parse of its body in this process, the unit of the agent targets.
//
// Processes: mock upstream, bare proxy, gateway, and the load generator (wrk or bench/probe.ts),
// each its own. Everything started here is stopped on exit, failure or Ctrl-C. Results are printed
// and written to bench/out/ (gitignored).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { measure, runProbe, runWrk, type Sample } from "./lib/load.ts";
import { installCleanup, rssMiB, stopAll, stopChild } from "./lib/procs.ts";
import { PORTKEY_VERSION, startPortkey } from "./lib/peer.ts";
import { profileRun } from "./lib/profile.ts";
import {
  cellTable, logCheck, pacingTable, peerTable, postgresVerdicts, reconciliationLine, summarise, verdicts, verdictTable, type PacingResult,
} from "./lib/report.ts";
import {
  agentConcs, heldNano, isGateway, parseUs, reconcile, reconcilePostgres, ROOT, smokeTest, startRig, WORKLOADS, type Reconciliation, type Rig, type Target, type WorkloadId,
} from "./lib/rig.ts";
import { streamsRun } from "./lib/streams.ts";
import { startPostgres } from "../tests/support/postgres.ts";
import { median, percentile } from "./lib/stats.ts";

const { values } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    memory: { type: "boolean", default: false },
    profile: { type: "boolean", default: false },
    rounds: { type: "string" },
    seconds: { type: "string" },
    "pace-ms": { type: "string", default: "20" },
    workloads: { type: "string" },
    conc: { type: "string" },
    keep: { type: "boolean", default: false },
    peer: { type: "string" },
    streams: { type: "boolean", default: false },
    "stream-count": { type: "string", default: "1000" },
    "agent-kb": { type: "string", default: "100" },
    postgres: { type: "boolean", default: false },
  },
});
if (values.peer !== undefined && values.peer !== "portkey") throw new Error(`--peer: only "portkey" is known, not "${values.peer}"`);

const quick = values.quick!;
const seconds = Number(values.seconds ?? (quick ? 2 : 10));
const rounds = Number(values.rounds ?? 2);
const paceMs = Number(values["pace-ms"]);
const agentKb = Number(values["agent-kb"]);
const OUT = join(ROOT, "bench", "out");

async function environment(): Promise<string> {
  const wrk = Bun.spawnSync(["wrk", "--version"]).stdout.toString().split("\n")[0]!.trim();
  const cpu = /model name\s*:\s*(.*)/.exec(await Bun.file("/proc/cpuinfo").text())?.[1] ?? "?";
  const cores = Bun.spawnSync(["nproc"]).stdout.toString().trim();
  return `Bun ${Bun.version}, ${wrk.split(" Copyright")[0]}, ${cores} cores (${cpu}), Linux ${Bun.spawnSync(["uname", "-r"]).stdout.toString().trim()}`;
}

function requireWrk(): void {
  if (Bun.spawnSync(["sh", "-c", "command -v wrk"]).exitCode !== 0) {
    throw new Error("wrk is not installed: apt-get update && apt-get install -y wrk");
  }
}

/** Per gateway target: upstream hits it caused, and how many requests wrk may have cut, for the request-log cross-check. */
const gatewayHits = new Map<string, number>();
const cutAllowance = new Map<string, number>();
const add = (m: Map<string, number>, t: Target, n: number) => m.set(t.id, (m.get(t.id) ?? 0) + n);
async function counted(rig: Rig, t: Target, fn: () => Promise<unknown>): Promise<void> {
  const h0 = await rig.upstreamHits();
  await fn();
  await Bun.sleep(250);
  const h1 = await rig.upstreamHits();
  if (isGateway(t)) add(gatewayHits, t, h1.fast - h0.fast + (h1.paced - h0.paced));
}

async function load(rig: Rig, t: Target, w: WorkloadId, c: number, s: number): Promise<void> {
  const wl = WORKLOADS.find((x) => x.id === w)!;
  if (wl.stream) await runProbe(t.port, rig.key, rig.bodyFile(w), c, s, [], t.headers?.(w));
  else {
    if (isGateway(t)) add(cutAllowance, t, c);
    await runWrk(t.port, rig.key, [rig.bodyFile(w)], c, s, t.headers?.(w));
  }
}

async function pacingCheck(rig: Rig): Promise<PacingResult[]> {
  const out: PacingResult[] = [];
  for (const t of rig.targets.filter((x) => x.id !== "proxy-streamed" && x.id !== "portkey" && x.id !== "gateway-pg")) {
    for (const w of ["chat-sse", "messages-sse"] as const) {
      await counted(rig, t, async () => {
        const r = await runProbe(t.pacedPort, rig.key, rig.bodyFile(w, true), 1, 120, ["--max-requests", "5", "--trace"]);
        if (r.errors) throw new Error(`pacing check ${t.id} ${w}: ${r.first_errors.join("; ")}`);
        const gaps = r.traces!.flatMap((tr) => tr.slice(1).map((x, i) => x - tr[i]!));
        const lags = r.chunk_lags_ms!;
        out.push({
          target: t.id, workload: w, arrivals: r.arrivals_p50, gapMs: median(gaps),
          ttfbMs: r.ttfb_p50_us / 1000, totalMs: r.total_p50_us / 1000,
          chunkLag: { n: lags.length, p50Ms: median(lags), p99Ms: percentile(lags, 99) },
        });
      });
    }
  }
  return out;
}

async function matrixRun(dir: string): Promise<void> {
  const workloads = values.workloads ? values.workloads.split(",") : WORKLOADS.map((w) => w.id);
  const concs = (values.conc ?? "1,16,64").split(",").map(Number);
  const env = await environment();
  console.log(`${env}\ncells of ${seconds} s, ${rounds} round(s), workloads ${workloads.join(", ")}, c = ${concs.join(", ")}, agent turns of ${agentKb} KiB`);
  const pg = values.postgres ? await startPostgres() : null;
  const postgresUrl = pg ? await pg.createDatabase("bench") : undefined;
  const rig = await startRig({ dir, paceMs, withProxy: true, agentKb, postgresUrl });
  const parses = new Map<WorkloadId, number>();
  for (const w of WORKLOADS.filter((x) => workloads.includes(x.id))) parses.set(w.id, await parseUs(rig.bodyFile(w.id)));
  if (values.peer) rig.targets.push(await startPortkey(rig.upstream.info.url));
  // Only the workloads asked for; a peer's workload it cannot serve is a cell marked so, not a stop.
  const unserved = new Map<string, Map<WorkloadId, string>>();
  for (const t of rig.targets) await counted(rig, t, async () => unserved.set(t.id, await smokeTest(rig, t, workloads)));
  for (const [t, m] of unserved) for (const [w, why] of m) console.log(`${t} cannot serve ${w} (${why.slice(0, 120)}): its cells are skipped`);
  const serves = (t: Target, w: string) => !unserved.get(t.id)?.has(w as WorkloadId);

  const warm = quick ? 1 : 2;
  console.log(`warm-up: ${warm} s per target and workload at c=16`);
  for (const t of rig.targets) for (const w of workloads) if (serves(t, w)) await counted(rig, t, () => load(rig, t, w as WorkloadId, 16, warm));

  const samples: Sample[] = [];
  for (let round = 1; round <= rounds; round++) {
    for (const w of WORKLOADS.filter((x) => workloads.includes(x.id))) {
      for (const c of w.agent ? agentConcs(concs) : concs) {
        // A B C, then C B A: each target goes first as often as last.
        const order = round % 2 ? rig.targets : [...rig.targets].reverse();
        for (const t of order) {
          if (!serves(t, w.id)) continue;
          const s = await measure(rig, w, c, t, seconds, round);
          samples.push(s);
          if (isGateway(t)) {
            add(gatewayHits, t, s.upstreamHits);
            if (!w.stream) add(cutAllowance, t, c);
          }
          console.log(
            `[round ${round}] ${w.id.padEnd(13)} c=${String(c).padEnd(2)} ${t.id.padEnd(14)} ${Math.round(s.rps).toString().padStart(6)} req/s  ` +
              `p50 ${(s.p50_us / 1000).toFixed(3)} ms  cpu ${Math.round(s.cpu_us)} µs/req` +
              `${s.errors ? `  ERRORS ${s.errors}: ${s.errorDetail}` : ""}${s.hitsOk ? "" : `  HITS ${s.upstreamHits} ≠ responses ${s.responses}`}`,
          );
        }
      }
    }
  }

  console.log(`pacing check: upstream paced ${paceMs} ms between SSE events, 5 streams per target at c=1, send-stamped text deltas`);
  const pacing = await pacingCheck(rig);
  const rssEnd = rssMiB(rig.gateway.pid);
  const held = await heldNano(rig);
  await stopChild(rig.gateway.proc);
  const rec = reconcile(rig.dbFile, held);
  const logs = logCheck(rec, gatewayHits.get("gateway") ?? 0, cutAllowance.get("gateway") ?? 0);
  let pgChecks: { rec: Reconciliation; logs: ReturnType<typeof logCheck> } | null = null;
  if (rig.pgGateway && postgresUrl) {
    const pgHeld = await heldNano(rig, rig.pgGateway);
    await stopChild(rig.pgGateway.proc);
    const pgRec = await reconcilePostgres(postgresUrl, pgHeld);
    pgChecks = { rec: pgRec, logs: logCheck(pgRec, gatewayHits.get("gateway-pg") ?? 0, cutAllowance.get("gateway-pg") ?? 0) };
  }
  await pg?.stop();

  const cells = summarise(samples, parses);
  const vs = [...verdicts(cells, pacing, paceMs), ...postgresVerdicts(samples)];
  const checksOk = cells.every((c) => c.errors === 0 && c.hitsOk) && rec.ok && logs.ok && (!pgChecks || (pgChecks.rec.ok && pgChecks.logs.ok));
  const md = [
    `# Gateway benchmark results${quick ? " (quick)" : ""}`,
    "",
    `${new Date().toISOString()} — ${env}. Cells of ${seconds} s, ${rounds} rounds, targets interleaved; medians over rounds.`,
    "JSON cells: wrk (1 thread, closed loop), p50 of the whole response. SSE cells: bench/probe.ts (raw sockets, closed loop), p50 time to first byte.",
    "CPU: utime+stime of the server process (all threads) from /proc/<pid>/stat per request the upstream served. Bare = the faster bare Bun proxy per cell.",
    `Agent turns: ${agentKb} KiB bodies. Added CPU in parses: (gateway − bare CPU per request) ÷ one JSON.parse of the cell's body (measured in the bench process).`,
    "",
    cellTable(cells),
    "",
    verdictTable(vs),
    "",
    "Pacing check (chunks forwarded as they arrive). Chunk latency: the paced upstream stamps each text delta with its wall-clock send time,",
    "the probe subtracts it from the receive time of the read that carried it (same machine, same clock); added = gateway − bare proxy; over this few chunks p99 is about the slowest one.",
    "",
    pacingTable(pacing),
    "",
    ...(values.peer
      ? [
          `Another gateway in the same run: Portkey's @portkey-ai/gateway ${PORTKEY_VERSION} from npm on Node ${Bun.spawnSync(["node", "--version"]).stdout.toString().trim()},`,
          "in front of the same mock upstream, routed by its x-portkey-provider and x-portkey-custom-host headers; same cells, interleaved with the others.",
          "",
          peerTable(samples, "portkey", unserved.get("portkey")),
          "",
        ]
      : []),
    `Checks: every cell ${cells.every((c) => c.errors === 0) ? "had zero errors" : "**had errors**"}; upstream hits ${cells.every((c) => c.hitsOk) ? "match" : "**do not match**"} responses ` +
      "(SSE exactly; JSON within the ≤ c requests wrk cuts at its deadline, which the server still completes).",
    reconciliationLine(rec),
    logs.text,
    ...(pgChecks
      ? [
          "",
          "The same gateway serving from PostgreSQL (--postgres: a local server, fsync off, the installation copied by migrate-db), cell by cell beside SQLite:",
          "",
          peerTable(samples, "gateway-pg"),
          "",
          `On PostgreSQL: ${reconciliationLine(pgChecks.rec)}`,
          pgChecks.logs.text,
        ]
      : []),
    `Gateway RSS at the end: ${rssEnd.toFixed(1)} MiB.`,
    "",
  ].join("\n");
  mkdirSync(OUT, { recursive: true });
  writeFileSync(join(OUT, "results.md"), md);
  writeFileSync(join(OUT, "results.json"), JSON.stringify({ env, seconds, rounds, samples, cells, pacing, verdicts: vs, reconciliation: rec, gatewayHits: Object.fromEntries(gatewayHits), postgres: pgChecks }, null, 2));
  console.log(`\n${md}\nwritten to bench/out/results.md (raw samples in bench/out/results.json)`);
  if (!checksOk) throw new Error("a correctness check failed (see above)");
}

async function memoryRun(dir: string): Promise<void> {
  const total = Number(values.seconds ?? (quick ? 30 : 120));
  const at = quick ? 10 : 20;
  const env = await environment();
  console.log(`${env}\nmemory: ${total} s at c=64, all four workloads in turn; VmRSS every second`);
  const rig = await startRig({ dir, paceMs, withProxy: false });
  const gw = rig.targets[0]!;
  await counted(rig, gw, () => smokeTest(rig, gw));
  const rss: { t: number; mib: number }[] = [];
  const t0 = performance.now();
  const timer = setInterval(() => rss.push({ t: (performance.now() - t0) / 1000, mib: rssMiB(gw.pid) }), 1000);
  const h0 = await rig.upstreamHits();
  const files = WORKLOADS.filter((w) => !w.agent).map((w) => rig.bodyFile(w.id));
  const r = await runWrk(gw.port, rig.key, files, 64, total);
  const endMiB = rssMiB(gw.pid);
  clearInterval(timer);
  await Bun.sleep(250);
  const hits = (await rig.upstreamHits()).fast - h0.fast;
  add(gatewayHits, gw, hits);
  add(cutAllowance, gw, 64);
  const held = await heldNano(rig);
  await stopChild(rig.gateway.proc);
  const rec = reconcile(rig.dbFile, held);

  const logs = logCheck(rec, gatewayHits.get("gateway") ?? 0, cutAllowance.get("gateway") ?? 0);
  const atMiB = rss.find((s) => s.t >= at)?.mib ?? NaN;
  const maxMiB = Math.max(...rss.map((s) => s.mib), endMiB);
  const growth = (endMiB - atMiB) / atMiB;
  const errors = r.connect + r.read + r.write + r.status + r.timeout;
  const hitsOk = hits - r.requests >= 0 && hits - r.requests <= 64;
  const pass = Math.abs(growth) <= 0.2 && maxMiB < 200;
  const curve = rss.filter((s, i) => i % (quick ? 5 : 10) === 9).map((s) => `${Math.round(s.t)} s: ${s.mib.toFixed(1)}`).join(", ");
  const md = [
    `# Gateway memory run${quick ? " (quick)" : ""}`,
    "",
    `${new Date().toISOString()} — ${env}. wrk c=64 for ${total} s, cycling chat/messages × JSON/SSE; ${r.requests.toLocaleString("en-US")} responses (${Math.round(r.requests / total)} req/s).`,
    "",
    "| VmRSS after " + at + " s | at the end | max | change | target | |",
    "|---:|---:|---:|---:|---|---|",
    `| ${atMiB.toFixed(1)} MiB | ${endMiB.toFixed(1)} MiB | ${maxMiB.toFixed(1)} MiB | ${growth >= 0 ? "+" : ""}${(growth * 100).toFixed(1)}% | within 20% and under 200 MiB | ${pass ? "PASS" : "**MISS**"} |`,
    "",
    `RSS curve (MiB): ${curve}.`,
    `Checks: ${errors} errors${errors ? ` (connect ${r.connect}, read ${r.read}, write ${r.write}, non-2xx ${r.status}, timeout ${r.timeout})` : ""}; ` +
      `upstream hits ${hits} vs responses ${r.requests} ${hitsOk ? "(match, ≤ 64 cut by wrk's deadline)" : "(**mismatch**)"}.`,
    reconciliationLine(rec),
    logs.text,
    "",
  ].join("\n");
  mkdirSync(OUT, { recursive: true });
  writeFileSync(join(OUT, "memory.md"), md);
  console.log(`\n${md}\nwritten to bench/out/memory.md`);
  if (errors || !hitsOk || !rec.ok || !logs.ok) throw new Error("a correctness check failed (see above)");
}

installCleanup();
const dir = mkdtempSync(join(tmpdir(), "gw-bench-"));
let code = 0;
try {
  requireWrk();
  if (values.memory) await memoryRun(dir);
  else if (values.streams) {
    const r = await streamsRun({
      dir, env: await environment(), paceMs, streams: Number(values["stream-count"]), seconds: Number(values.seconds ?? (quick ? 20 : 120)),
      chunks: quick ? 100 : 250, quick, profileDir: values.profile ? join(OUT, "profiles") : undefined,
    });
    mkdirSync(OUT, { recursive: true });
    writeFileSync(join(OUT, "streams.md"), r.md);
    console.log(`\n${r.md}\nwritten to bench/out/streams.md`);
    if (!r.ok) throw new Error("a correctness check failed (see above)");
  }
  else if (values.profile) {
    const workloads = values.workloads?.split(",") as WorkloadId[] | undefined;
    const pg = values.postgres ? await startPostgres() : null;
    try {
      await profileRun({ dir, out: OUT, seconds: Number(values.seconds ?? (quick ? 3 : 10)), paceMs, workloads, postgres: pg ? (name) => pg.createDatabase(name) : undefined });
    } finally {
      await pg?.stop();
    }
  }
  else await matrixRun(dir);
} catch (e) {
  console.error(`bench: ${(e as Error).message}`);
  code = 1;
} finally {
  await stopAll();
  if (values.keep) console.log(`kept ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}
process.exit(code);
