// `bun bench/pg-ab.ts --base REV`: the gateway serving from PostgreSQL, this tree against another
// revision, interleaved in one run, with this tree's SQLite gateway as the yardstick; the gateway's
// CPU per request and PostgreSQL's own (every process of that side's server, from /proc).
//
//   bun bench/pg-ab.ts --base HEAD~1 [--workloads chat-json] [--conc 16] [--seconds 3] [--rounds 3] [--instances 3] [--accounts 50]
//
// --instances N: each side serves from N gateway instances on its one database, each loaded by its
// own wrk at the cell's c (JSON workloads only); the gateway CPU is the instances' sum.
//
// --accounts N: each side's installation has N accounts, each with its own key, and wrk takes the
// keys in turn request by request (JSON workloads only), so that the money statements of one
// instance touch many accounts' rows rather than one's.
//
// Each side has its own PostgreSQL server (fsync off, loopback), mock upstream and keys, so that
// PostgreSQL's CPU is counted per side.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { checkoutBase } from "./lib/base-tree.ts";
import { measure, runWrk, type Sample } from "./lib/load.ts";
import { cpuSeconds, installCleanup, startChild, stopAll } from "./lib/procs.ts";
import { startRig, WORKLOADS, type GatewayInfo, type Rig, type Target, type Workload } from "./lib/rig.ts";
import { median } from "./lib/stats.ts";
import { startPostgres, type TestPostgres } from "../tests/support/postgres.ts";

const { values } = parseArgs({
  options: {
    base: { type: "string", default: "HEAD" },
    workloads: { type: "string", default: "chat-json" },
    conc: { type: "string", default: "16" },
    seconds: { type: "string", default: "3" },
    rounds: { type: "string", default: "3" },
    instances: { type: "string", default: "1" },
    accounts: { type: "string", default: "1" },
  },
});

/** The server's processes: the postmaster listening on `port` and its children (backends, writers). */
function serverPids(port: string): number[] {
  const procs = readdirSync("/proc").filter((d) => /^\d+$/.test(d));
  const read = (pid: string, f: string) => {
    try {
      return readFileSync(`/proc/${pid}/${f}`, "utf8");
    } catch {
      return "";
    }
  };
  const master = procs.find((p) => {
    const argv = read(p, "cmdline").split("\0");
    return argv[0]?.endsWith("/postgres") && argv.includes("-p") && argv[argv.indexOf("-p") + 1] === port;
  });
  if (!master) throw new Error(`no PostgreSQL server on port ${port}`);
  const children = procs.filter((p) => {
    const stat = read(p, "stat");
    return stat !== "" && stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1] === master;
  });
  return [Number(master), ...children.map(Number)];
}

const pgCpu = (port: string) => serverPids(port).reduce((s, pid) => s + (() => { try { return cpuSeconds(pid); } catch { return 0; } })(), 0);

const instances = Number(values.instances);
const ms = (us: number | undefined) => ((us ?? NaN) / 1000).toFixed(1);

/** One cell on several instances at once, a wrk each; CPU and hits summed, as `measure` does for one. */
async function measureMany(rig: Rig, w: Workload, c: number, ts: Target[], seconds: number, round: number): Promise<Sample> {
  if (ts.length === 1) return measure(rig, w, c, ts[0]!, seconds, round);
  const hits0 = (await rig.upstreamHits()).fast;
  const cpu0 = ts.reduce((n, t) => n + cpuSeconds(t.pid), 0);
  const rs = await Promise.all(ts.map((t) => runWrk(t.port, rig.keys.join(","), [rig.bodyFile(w.id)], c, seconds)));
  await Bun.sleep(250);
  const hits = (await rig.upstreamHits()).fast - hits0;
  const cpu = ts.reduce((n, t) => n + cpuSeconds(t.pid), 0) - cpu0;
  const errors = rs.reduce((n, r) => n + r.connect + r.read + r.write + r.status + r.timeout, 0);
  return {
    workload: w.id, c, target: "gateway-pg", round, rps: rs.reduce((n, r) => n + r.requests / (r.duration_us / 1e6), 0), p50_us: median(rs.map((r) => r.lat_p50_us)),
    p99_us: median(rs.map((r) => r.lat_p99_us)),
    responses: rs.reduce((n, r) => n + r.requests, 0), errors, errorDetail: errors ? `${errors} errors` : "",
    upstreamHits: hits, cpu_us: (cpu * 1e6) / hits, upstream_cpu_us: NaN, hitsOk: true,
  };
}

installCleanup();
const base = checkoutBase(values.base!);
const servers: TestPostgres[] = [];
try {
  const side = async (name: string, dir: string, gatewayRoot?: string) => {
    const pg = await startPostgres();
    servers.push(pg);
    const url = await pg.createDatabase("bench");
    const rig = await startRig({ dir, paceMs: 20, withProxy: false, gatewayRoot, postgresUrl: url, accounts: Number(values.accounts) });
    const more: Target[] = [];
    for (let i = 1; i < instances; i++) {
      const gw = await startChild<GatewayInfo>(`gateway on PostgreSQL #${i + 1}`, ["bun", "src/cli/main.ts", "serve", "--config", join(dir, "gateway-pg.toml"), "--port", "0", "--json"], {
        cwd: gatewayRoot ?? process.cwd(),
      });
      more.push({ id: "gateway-pg", pid: gw.pid, port: gw.info.port, pacedPort: gw.info.port });
    }
    return { name, rig, port: new URL(url).port, url, more };
  };
  const a = await side("this tree", join(base.dir, "a"));
  const b = await side(`base ${base.rev}`, join(base.dir, "b"), base.root);
  const pgOf = (r: Rig) => r.targets.find((t) => t.id === "gateway-pg")!;
  const n = instances > 1 ? ` ×${instances}` : "";
  const cells: { name: string; rig: Rig; ts: Target[]; port: string | null; url: string | null }[] = [
    { name: "SQLite (this tree)", rig: a.rig, ts: [a.rig.targets.find((t) => t.id === "gateway")!], port: null, url: null },
    { name: `PostgreSQL${n} (this tree)`, rig: a.rig, ts: [pgOf(a.rig), ...a.more], port: a.port, url: a.url },
    { name: `PostgreSQL${n} (${b.name})`, rig: b.rig, ts: [pgOf(b.rig), ...b.more], port: b.port, url: b.url },
  ];
  /** Transactions committed in the database (each statement outside a transaction is one): the statements a request costs. */
  const commits = async (url: string | null) => {
    if (!url) return 0;
    const sql = new Bun.SQL(url, { max: 1 });
    try {
      const [r] = await sql`SELECT pg_stat_force_next_flush(), xact_commit::bigint AS n FROM pg_stat_database WHERE datname = current_database()`;
      return Number(r.n);
    } finally {
      await sql.close();
    }
  };
  const workloads = WORKLOADS.filter((w) => values.workloads!.split(",").includes(w.id));
  const concs = values.conc!.split(",").map(Number);
  for (const c of cells) for (const w of workloads) await measureMany(c.rig, w, 16, c.ts, 1, 0);

  const samples = new Map<string, (Sample & { pg_us: number; stmts: number })[]>();
  for (let round = 1; round <= Number(values.rounds); round++) {
    for (const w of workloads) {
      for (const conc of concs) {
        for (const c of round % 2 ? cells : [...cells].reverse()) {
          const pg0 = c.port ? pgCpu(c.port) : 0;
          const x0 = await commits(c.url);
          const x = await measureMany(c.rig, w, conc, c.ts, Number(values.seconds), round);
          const pg_us = c.port ? ((pgCpu(c.port) - pg0) * 1e6) / x.upstreamHits : 0;
          await Bun.sleep(600);
          const stmts = ((await commits(c.url)) - x0) / x.upstreamHits;
          if (x.errors) throw new Error(`${c.name} ${w.id} c=${conc}: ${x.errorDetail}`);
          const k = `${w.id}|${conc}|${c.name}`;
          samples.set(k, [...(samples.get(k) ?? []), { ...x, pg_us, stmts }]);
          console.log(`[round ${round}] ${w.id} c=${conc} ${c.name.padEnd(26)} ${Math.round(x.rps)} req/s  cpu ${Math.round(x.cpu_us)} µs/req  PostgreSQL ${Math.round(pg_us)} µs/req, ${stmts.toFixed(2)} statements/req, p50 ${ms(x.p50_us)} p99 ${ms(x.p99_us)} ms`);
        }
      }
    }
  }
  const rows = [
    "| workload | c | target | req/s | p50 ms | p99 ms | gateway CPU µs/req | PostgreSQL CPU µs/req | statements/req | gateway CPU ÷ SQLite's | req/s ÷ SQLite's |",
    "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const w of workloads) {
    for (const conc of concs) {
      const get = (n: string, f: (x: Sample & { pg_us: number; stmts: number }) => number) => median(samples.get(`${w.id}|${conc}|${n}`)!.map(f));
      const [sqRps, sqCpu] = [get(cells[0]!.name, (x) => x.rps), get(cells[0]!.name, (x) => x.cpu_us)];
      for (const c of cells) {
        const [rps, cpu, pgUs, st] = [get(c.name, (x) => x.rps), get(c.name, (x) => x.cpu_us), get(c.name, (x) => x.pg_us), get(c.name, (x) => x.stmts)];
        const [p50, p99] = [get(c.name, (x) => x.p50_us), get(c.name, (x) => x.p99_us ?? NaN)];
        rows.push(`| ${w.id} | ${conc} | ${c.name} | ${Math.round(rps)} | ${ms(p50)} | ${ms(p99)} | ${Math.round(cpu)} | ${c.port ? Math.round(pgUs) : "–"} | ${c.port ? st.toFixed(2) : "–"} | ${(cpu / sqCpu).toFixed(2)}× | ${(rps / sqRps).toFixed(2)} |`);
      }
    }
  }
  console.log(`\nMedians of ${values.rounds} interleaved rounds of ${values.seconds} s cells:\n\n${rows.join("\n")}`);
} finally {
  await stopAll();
  for (const s of servers) await s.stop();
  base.remove();
}
