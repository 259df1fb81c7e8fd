// `bun bench/ab.ts --base REV`: this tree's gateway against another revision's, side by side in one
// run. Differences of 10 to 20 µs per request drown in the noise between separate runs on a shared
// machine (bench/RESULTS.md); interleaved cells of the same run compare them.
//
//   bun bench/ab.ts --base HEAD~1[,REV…] [--workloads chat-json,messages-json] [--conc 1,16] [--seconds 3] [--rounds 3] [--agent-kb 100] [--bare]
//
// --bare adds the bare Bun proxy (its buffered listener, on this tree's mock upstream) as one more
// side, and every side's CPU per request is also given as a multiple of the bare proxy's in the
// same round: how an older tree stands against the physical limit on today's machine.
//
// Several bases (a comma list: branches to weigh against each other) run as more sides of the same
// interleaved rounds, each reported against this tree.
// Each side has its own mock upstream, database and key; cells alternate A B B A … per round. The
// base revision is checked out into a temporary git worktree that borrows this tree's node_modules.
import { join } from "node:path";
import { parseArgs } from "node:util";
import { checkoutBase } from "./lib/base-tree.ts";
import { measure, type Sample } from "./lib/load.ts";
import { installCleanup, stopAll } from "./lib/procs.ts";
import { ROOT, smokeTest, startRig, WORKLOADS, type Rig, type Target } from "./lib/rig.ts";
import { median } from "./lib/stats.ts";

const { values } = parseArgs({
  options: {
    base: { type: "string", default: "HEAD" },
    workloads: { type: "string", default: "chat-json,messages-json" },
    conc: { type: "string", default: "1,16" },
    seconds: { type: "string", default: "3" },
    rounds: { type: "string", default: "3" },
    "agent-kb": { type: "string", default: "100" },
    bare: { type: "boolean", default: false },
  },
});

installCleanup();
const bases = values.base!.split(",").map(checkoutBase);
try {
  const gatewayOf = (rig: Rig) => rig.targets.find((t) => t.id === "gateway")!;
  const here = await startRig({ dir: join(bases[0]!.dir, "a"), paceMs: 20, withProxy: values.bare!, agentKb: Number(values["agent-kb"]) });
  const sides: { name: string; rig: Rig; target: Target }[] = [{ name: "this tree", rig: here, target: gatewayOf(here) }];
  for (const b of bases) {
    const rig = await startRig({ dir: join(b.dir, "b"), paceMs: 20, withProxy: false, gatewayRoot: b.root, agentKb: Number(values["agent-kb"]) });
    sides.push({ name: `base ${b.rev}`, rig, target: gatewayOf(rig) });
  }
  if (values.bare) sides.push({ name: "bare proxy", rig: here, target: here.targets.find((t) => t.id === "proxy-buffered")! });
  for (const s of sides) await smokeTest(s.rig, s.target);
  const seconds = Number(values.seconds);
  const workloads = WORKLOADS.filter((w) => values.workloads!.split(",").includes(w.id));
  const concs = values.conc!.split(",").map(Number);
  // Warm every JIT before anything is measured.
  for (const s of sides) for (const w of workloads) await measure(s.rig, w, 16, s.target, 1, 0);

  const samples = new Map<string, Sample[]>();
  for (let round = 1; round <= Number(values.rounds); round++) {
    for (const w of workloads) {
      for (const c of concs) {
        // Each round in the other direction, so no side always runs right after the same one.
        const order = round % 2 ? sides : [...sides].reverse();
        for (const s of order) {
          const x = await measure(s.rig, w, c, s.target, seconds, round);
          if (x.errors) throw new Error(`${s.name} ${w.id} c=${c}: ${x.errorDetail}`);
          const k = `${w.id}|${c}|${s.name}`;
          samples.set(k, [...(samples.get(k) ?? []), x]);
          console.log(`[round ${round}] ${w.id.padEnd(14)} c=${String(c).padEnd(3)} ${s.name.padEnd(14)} ${Math.round(x.rps)} req/s  p50 ${(x.p50_us / 1000).toFixed(3)} ms  cpu ${Math.round(x.cpu_us)} µs/req`);
        }
      }
    }
  }

  const bareRows = ["| workload | c | side | CPU µs/req side / bare (ratio) | throughput ÷ bare |", "|---|---:|---|---:|---:|"];
  const rows = ["| workload | c | base | req/s this / base | p50 ms this / base (diff) | CPU µs/req this / base (ratio) |", "|---|---:|---|---:|---:|---:|"];
  for (const w of workloads) {
    for (const c of concs) {
      const get = (s: string, f: (x: Sample) => number) => median(samples.get(`${w.id}|${c}|${s}`)!.map(f));
      const all = sides.map((s) => ({ name: s.name, rps: get(s.name, (x) => x.rps), p50: get(s.name, (x) => x.p50_us) / 1000, cpu: get(s.name, (x) => x.cpu_us) }));
      const bare = all.find((s) => s.name === "bare proxy");
      const [a, ...others] = all.filter((s) => s !== bare);
      if (bare) {
        for (const s of [a!, ...others]) {
          bareRows.push(`| ${w.id} | ${c} | ${s.name} | ${Math.round(s.cpu)} / ${Math.round(bare.cpu)} (${(s.cpu / bare.cpu).toFixed(2)}×) | ${(s.rps / bare.rps).toFixed(2)} |`);
        }
      }
      for (const b of others) {
        const diff = a!.p50 - b.p50;
        rows.push(
          `| ${w.id} | ${c} | ${b.name.slice(5)} | ${Math.round(a!.rps)} / ${Math.round(b.rps)} | ${a!.p50.toFixed(3)} / ${b.p50.toFixed(3)} (${(diff >= 0 ? "+" : "") + diff.toFixed(3)}) | ${Math.round(a!.cpu)} / ${Math.round(b.cpu)} (${(a!.cpu / b.cpu).toFixed(2)}×) |`,
        );
      }
    }
  }
  console.log(`\nThis tree against ${bases.map((b) => b.rev).join(", ")}, medians of ${values.rounds} interleaved rounds of ${seconds} s cells:\n\n${rows.join("\n")}`);
  if (values.bare) console.log(`\nEach side against the bare proxy in the same rounds:\n\n${bareRows.join("\n")}`);
} finally {
  await stopAll();
  for (const b of bases) b.remove();
}
