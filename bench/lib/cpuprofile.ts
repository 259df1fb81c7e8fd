// Reads a V8/JSC .cpuprofile (what `bun --cpu-prof` writes) and ranks where the time went:
// self time per function (file:function:line), inclusive time per function, self time per area.
//
//   bun bench/lib/cpuprofile.ts FILE.cpuprofile     prints the Markdown summary
import { readFileSync } from "node:fs";
import { ROOT } from "./rig.ts";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** A sample is charged at most this many median sampling intervals; the rest of a longer gap is counted apart. */
const GAP_FACTOR = 10;

const SPECIAL = new Set(["(idle)", "(program)", "(garbage collector)", "(root)"]);

function place(url: string): string {
  if (!url) return "";
  let u = url.replace(/^file:\/\//, "");
  if (u.startsWith(ROOT + "/")) u = u.slice(ROOT.length + 1);
  const nm = u.lastIndexOf("node_modules/");
  if (nm !== -1) u = u.slice(nm + "node_modules/".length);
  return u;
}

function area(url: string, fn: string): string {
  if (SPECIAL.has(fn)) return fn;
  const p = place(url);
  if (p.startsWith("src/")) return p.split("/").slice(0, 2).join("/");
  if (p.startsWith("elysia/")) return "elysia";
  if (p.startsWith("drizzle-orm/")) return "drizzle-orm";
  if (!p) return "native / Bun runtime (no JS source)";
  return p.startsWith("bench/") || p.startsWith("tests/") ? p : `Bun builtins (${p.split("/")[0]})`;
}

export interface ProfileSummary {
  busyMs: number;
  totalMs: number;
  /** Time between samples beyond GAP_FACTOR sampling intervals: charged to no function. */
  gapMs: number;
  self: { name: string; ms: number }[];
  inclusive: { name: string; ms: number }[];
  areas: { name: string; ms: number }[];
}

export function summariseProfile(file: string): ProfileSummary {
  const p = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const key = (n: ProfileNode) => {
    const f = n.callFrame.functionName || "(anonymous)";
    if (SPECIAL.has(f)) return f;
    const at = place(n.callFrame.url);
    return at ? `${at}:${f}:${n.callFrame.lineNumber + 1}` : `${f} (native)`;
  };
  const self = new Map<string, number>();
  const incl = new Map<string, number>();
  const areas = new Map<string, number>();
  let total = 0;
  let idle = 0;
  let gaps = 0;
  const sorted = p.timeDeltas.slice().sort((a, b) => a - b);
  const capMs = (GAP_FACTOR * (sorted[sorted.length >> 1] ?? 0)) / 1000;
  for (let i = 0; i < p.samples.length; i++) {
    // timeDeltas[i] is the time since the previous sample; charge it to the sample it leads to, up to
    // GAP_FACTOR intervals: a longer gap (the sampler not scheduled on a busy machine, a pause between
    // runs) says nothing of where the time went. One 250 ms gap made rate-limit.ts's `now`, sampled
    // 12 times, 3.4 % of a profile whose gaps past ten intervals were 13 % of its time (bench/RESULTS.md).
    let dt = (p.timeDeltas[i + 1] ?? 0) / 1000;
    total += dt;
    if (dt > capMs) {
      gaps += dt - capMs;
      dt = capMs;
    }
    const leaf = byId.get(p.samples[i]!)!;
    const k = key(leaf);
    if (k === "(idle)") {
      idle += dt;
      continue;
    }
    self.set(k, (self.get(k) ?? 0) + dt);
    // Native frames carry no URL: charge them to the nearest JS caller's area.
    let a = leaf;
    while (!a.callFrame.url && !SPECIAL.has(a.callFrame.functionName) && parent.has(a.id)) a = byId.get(parent.get(a.id)!)!;
    const ar = area(a.callFrame.url, a.callFrame.functionName);
    areas.set(ar, (areas.get(ar) ?? 0) + dt);
    const seen = new Set<string>();
    for (let n: ProfileNode | undefined = leaf; n; n = parent.has(n.id) ? byId.get(parent.get(n.id)!) : undefined) {
      const nk = key(n);
      if (nk === "(root)" || seen.has(nk)) continue;
      seen.add(nk);
      incl.set(nk, (incl.get(nk) ?? 0) + dt);
    }
  }
  const rank = (m: Map<string, number>) => [...m].map(([name, ms]) => ({ name, ms })).sort((a, b) => b.ms - a.ms);
  return { busyMs: total - idle - gaps, totalMs: total, gapMs: gaps, self: rank(self), inclusive: rank(incl), areas: rank(areas) };
}

export function profileMarkdown(s: ProfileSummary, top = 20): string {
  const pct = (ms: number) => `${((ms / s.busyMs) * 100).toFixed(1)}%`;
  const table = (title: string, rows: { name: string; ms: number }[]) =>
    [`| ${title} | ms | % of busy |`, "|---|---:|---:|", ...rows.map((r) => `| \`${r.name}\` | ${r.ms.toFixed(0)} | ${pct(r.ms)} |`)].join("\n");
  return [
    `Busy ${s.busyMs.toFixed(0)} ms of ${s.totalMs.toFixed(0)} ms sampled (the JS thread; Bun's HTTP client thread is not sampled); ${s.gapMs.toFixed(0)} ms in gaps between samples longer than ${GAP_FACTOR} intervals, charged to no function.`,
    "",
    "Self time by area (native frames charged to their JS caller's area):",
    "",
    table("area", s.areas.slice(0, 12)),
    "",
    `Top ${top} functions by self time:`,
    "",
    table("function", s.self.slice(0, top)),
    "",
    `Top ${top} gateway functions (src/) by inclusive time:`,
    "",
    table("function", s.inclusive.filter((r) => r.name.startsWith("src/")).slice(0, top)),
  ].join("\n");
}

if (import.meta.main) {
  const file = process.argv[2];
  if (!file) throw new Error("usage: bun bench/lib/cpuprofile.ts FILE.cpuprofile");
  console.log(profileMarkdown(summariseProfile(file)));
}
