// `bun bench/pg-statements.ts`: what PostgreSQL itself does for the gateway's requests, per request.
// One gateway serving from a throwaway PostgreSQL (pg_stat_statements loaded, planning tracked), one
// wrk load, then per request: PostgreSQL's CPU by process kind (from /proc), statements and commits
// (pg_stat_database), WAL records and bytes (pg_stat_wal), and every statement kind's calls, plans,
// rows and execution time (pg_stat_statements).
//
//   bun bench/pg-statements.ts [--workloads chat-json] [--conc 16] [--seconds 5] [--base REV] [--perf]
//
// --perf: `perf record` on the server's processes during each cell; the top functions by self time.
//
// --base REV: the same load on another revision's gateway too (its own server), interleaved, so
// that before and after are read in one run.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { checkoutBase } from "./lib/base-tree.ts";
import { measure } from "./lib/load.ts";
import { cpuSeconds, installCleanup, stopAll } from "./lib/procs.ts";
import { startRig, WORKLOADS, type Rig } from "./lib/rig.ts";
import { startPostgres, type TestPostgres } from "../tests/support/postgres.ts";

const { values } = parseArgs({
  options: {
    workloads: { type: "string", default: "chat-json" },
    conc: { type: "string", default: "16" },
    seconds: { type: "string", default: "5" },
    rounds: { type: "string", default: "1" },
    base: { type: "string" },
    perf: { type: "boolean", default: false },
  },
});

const STATS = "-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track_planning=on -c pg_stat_statements.max=1000";

const read = (pid: string, f: string) => {
  try {
    return readFileSync(`/proc/${pid}/${f}`, "utf8");
  } catch {
    return "";
  }
};

/** The server's processes by pid: the postmaster on `port` and its children, each with what it is (its title). */
function serverProcs(port: string): Map<number, string> {
  const procs = readdirSync("/proc").filter((d) => /^\d+$/.test(d));
  const master = procs.find((p) => {
    const argv = read(p, "cmdline").split("\0");
    return argv[0]?.endsWith("/postgres") && argv.includes("-p") && argv[argv.indexOf("-p") + 1] === port;
  });
  if (!master) throw new Error(`no PostgreSQL server on port ${port}`);
  const out = new Map<number, string>([[Number(master), "postmaster"]]);
  for (const p of procs) {
    const stat = read(p, "stat");
    if (stat === "" || stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1] !== master) continue;
    // "postgres: gateway bench 127.0.0.1(5432) idle" / "postgres: walwriter"
    const title = read(p, "cmdline").replace(/\0/g, " ").trim().replace(/^postgres: /, "");
    out.set(Number(p), /^\S+ \S+ 127\.0\.0\.1/.test(title) ? `backend ${title.split(" ")[1]}` : title);
  }
  return out;
}

const cpuByKind = (port: string) => {
  const m = new Map<string, number>();
  for (const [pid, kind] of serverProcs(port)) {
    try {
      m.set(kind, (m.get(kind) ?? 0) + cpuSeconds(pid));
    } catch {
      // gone meanwhile
    }
  }
  return m;
};

interface Counters {
  commits: number;
  rollbacks: number;
  walRecords: number;
  walBytes: number;
}

async function counters(sql: InstanceType<typeof Bun.SQL>): Promise<Counters> {
  const [d] = await sql`SELECT pg_stat_force_next_flush(), xact_commit::bigint AS c, xact_rollback::bigint AS r FROM pg_stat_database WHERE datname = current_database()`;
  const [w] = await sql`SELECT wal_records::bigint AS n, wal_bytes::bigint AS b FROM pg_stat_wal`;
  return { commits: Number(d.c), rollbacks: Number(d.r), walRecords: Number(w.n), walBytes: Number(w.b) };
}

interface Side {
  name: string;
  pg: TestPostgres;
  rig: Rig;
  port: string;
  sql: InstanceType<typeof Bun.SQL>;
}

async function side(name: string, dir: string, gatewayRoot?: string): Promise<Side> {
  const pg = await startPostgres(STATS);
  servers.push(pg);
  const url = await pg.createDatabase("bench");
  const rig = await startRig({ dir, paceMs: 20, withProxy: false, gatewayRoot, postgresUrl: url });
  const sql = new Bun.SQL(url, { max: 1 });
  await sql`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`;
  return { name, pg, rig, port: new URL(url).port, sql };
}

/** What a statement is, by its text: the ledger's and the log's statements by name, anything else by its start. */
function kind(q: string): string {
  const one = q.replace(/\s+/g, " ").trim();
  const batch = one.includes("unnest(");
  if (one.includes("INSERT INTO holds")) return batch ? "reserve, batch" : "reserve, alone";
  if (one.includes("INSERT INTO ledger_entries") && one.includes("DELETE FROM holds")) return `post, ${batch ? "batch" : "alone"}${one.includes("INSERT INTO request_logs") ? ", with log rows" : ""}`;
  if (one.startsWith("WITH h AS (DELETE FROM holds")) return batch || one.includes("ANY(") ? "void, batch" : "void, alone";
  return short(one, 70);
}

/** A statement's text on one line, cut to `n` characters. */
const short = (q: string, n = 110) => {
  const one = q.replace(/\s+/g, " ").trim();
  return one.length > n ? `${one.slice(0, n)}…` : one;
};

async function cell(s: Side, workload: string, c: number, seconds: number): Promise<string[]> {
  const w = WORKLOADS.find((x) => x.id === workload)!;
  const t = s.rig.targets.find((x) => x.id === "gateway-pg")!;
  await s.sql`SELECT pg_stat_statements_reset()`;
  const c0 = await counters(s.sql);
  const cpu0 = cpuByKind(s.port);
  const perf = values.perf
    ? Bun.spawn(["perf", "record", "-q", "-F", "499", ...(process.env.PERF_G ? ["--call-graph", "dwarf,16384"] : []), "-o", `/tmp/pg-statements-${process.pid}.perf`, "-p", [...serverProcs(s.port).keys()].join(",")], { stdout: "ignore", stderr: "inherit" })
    : null;
  const x = await measure(s.rig, w, c, t, seconds, 1);
  if (perf) {
    perf.kill("SIGINT");
    await perf.exited;
  }
  const cpu1 = cpuByKind(s.port);
  await Bun.sleep(600);
  const c1 = await counters(s.sql);
  const n = x.upstreamHits;
  const per = (v: number) => (v / n).toFixed(3);
  const kinds = [...cpu1.keys()].map((k) => [k, ((cpu1.get(k)! - (cpu0.get(k) ?? 0)) * 1e6) / n] as const).filter(([, us]) => us >= 0.5);
  const pgUs = kinds.reduce((a, [, us]) => a + us, 0);
  const lines = [
    `\n## ${s.name}: ${workload} c=${c}, ${seconds} s: ${Math.round(x.rps)} req/s, ${n} requests, gateway CPU ${Math.round(x.cpu_us)} µs/req, PostgreSQL CPU ${Math.round(pgUs)} µs/req`,
    `commits/req ${per(c1.commits - c0.commits)} (this probe adds 2 a cell), rollbacks/req ${per(c1.rollbacks - c0.rollbacks)}, WAL records/req ${per(c1.walRecords - c0.walRecords)}, WAL bytes/req ${Math.round((c1.walBytes - c0.walBytes) / n)}`,
    `PostgreSQL CPU µs/req by process: ${kinds.sort((a, b) => b[1] - a[1]).map(([k, us]) => `${k} ${us.toFixed(1)}`).join(", ")}`,
    "",
    "| calls/req | plans/call | rows/call | exec µs/call | plan µs/call | exec+plan µs/req | WAL bytes/req | statement |",
    "|---:|---:|---:|---:|---:|---:|---:|---|",
  ];
  const rows = await s.sql`SELECT query, calls::bigint AS calls, plans::bigint AS plans, rows::bigint AS rows, total_exec_time AS exec_ms, total_plan_time AS plan_ms, wal_bytes::bigint AS wal
    FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY total_exec_time + total_plan_time DESC`;
  const byKind = new Map<string, { texts: number; calls: number; plans: number; rows: number; exec: number; plan: number; wal: number }>();
  for (const r of rows as { query: string; calls: string; plans: string; rows: string; exec_ms: number; plan_ms: number; wal: string }[]) {
    if (/pg_stat_statements|pg_stat_force_next_flush|pg_stat_wal/.test(r.query)) continue;
    const k = kind(r.query);
    const m = byKind.get(k) ?? { texts: 0, calls: 0, plans: 0, rows: 0, exec: 0, plan: 0, wal: 0 };
    byKind.set(k, { texts: m.texts + 1, calls: m.calls + Number(r.calls), plans: m.plans + Number(r.plans), rows: m.rows + Number(r.rows), exec: m.exec + r.exec_ms, plan: m.plan + r.plan_ms, wal: m.wal + Number(r.wal) });
  }
  const calls = [...byKind.values()].reduce((t, m) => t + m.calls, 0);
  const plans = [...byKind.values()].reduce((t, m) => t + m.plans, 0);
  lines.splice(3, 0, `statements/req ${per(calls)} (pg_stat_statements, every kind), planned/req ${per(plans)}`);
  for (const [k, m] of [...byKind].sort((a, b) => b[1].exec + b[1].plan - (a[1].exec + a[1].plan))) {
    lines.push(
      `| ${per(m.calls)} | ${(m.plans / m.calls).toFixed(2)} | ${(m.rows / m.calls).toFixed(1)} | ${((m.exec * 1000) / m.calls).toFixed(0)} | ${((m.plan * 1000) / m.calls).toFixed(0)} | ${(((m.exec + m.plan) * 1000) / n).toFixed(1)} | ${Math.round(m.wal / n)} | ${k}${m.texts > 1 ? ` (${m.texts} texts)` : ""} |`,
    );
  }
  if (perf) {
    const r = Bun.spawnSync(["perf", "report", "-q", "-i", `/tmp/pg-statements-${process.pid}.perf`, ...(process.env.PERF_G ? ["--children"] : ["--no-children"]), "--sort", "symbol", "-g", "none", "--percent-limit", "0.7"], { stdout: "pipe", stderr: "pipe" });
    lines.push("", "perf, self time:", ...r.stdout.toString().split("\n").filter((l) => l.trim()).slice(0, 45));
  }
  return lines;
}

installCleanup();
const servers: TestPostgres[] = [];
const base = values.base ? checkoutBase(values.base) : null;
try {
  const dir = base?.dir ?? `/tmp/pg-statements-${process.pid}`;
  const sides = [await side("this tree", join(dir, "a"))];
  if (base) sides.push(await side(`base ${base.rev}`, join(dir, "b"), base.root));
  const c = Number(values.conc);
  for (const s of sides) for (const w of values.workloads!.split(",")) await measure(s.rig, WORKLOADS.find((x) => x.id === w)!, c, s.rig.targets.find((x) => x.id === "gateway-pg")!, 1, 0);
  for (let round = 1; round <= Number(values.rounds); round++) {
    for (const w of values.workloads!.split(",")) {
      for (const s of round % 2 ? sides : [...sides].reverse()) console.log((await cell(s, w, c, Number(values.seconds))).join("\n"));
    }
  }
} finally {
  await stopAll();
  for (const s of servers) await s.stop();
  base?.remove();
}
