#!/usr/bin/env bun
// Backups under load, measured: a real `gateway serve` on a database with some history, driven by a
// closed loop of chat completions, while `sqlite3 DB "VACUUM INTO …"` and `sqlite3 DB ".backup …"`
// each copy the file (with a time limit). Each finished copy is checked with PRAGMA integrity_check
// and with the ledger reconciliation query of docs/database.md.
//
//   bun bench/backup.ts [--seed-rows 300000] [--conc 16] [--rate 0] [--warmup 10] [--timeout 60] [--settle 5]
//
// --rate 0 (default): closed loops, as fast as the gateway answers (the demo provider answers at
// once, so this is far more writes per second than real LLM traffic). --rate N: N requests per
// second in all, for a load of real-world size.
//
// Needs the sqlite3 command (Debian: apt-get install -y sqlite3). Results: printed, and the JSON
// in bench/out/backup/result.json.
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";

const ROOT = join(import.meta.dir, "..");
const MAIN = join(ROOT, "src/cli/main.ts");
const { values: opts } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    "seed-rows": { type: "string", default: "300000" },
    conc: { type: "string", default: "16" },
    rate: { type: "string", default: "0" },
    warmup: { type: "string", default: "10" },
    timeout: { type: "string", default: "60" },
    settle: { type: "string", default: "5" },
  },
});
const SEED_ROWS = Number(opts["seed-rows"]);
const CONC = Number(opts.conc);
const RATE = Number(opts.rate);
const WARMUP_S = Number(opts.warmup);
const TIMEOUT_S = Number(opts.timeout);
const SETTLE_S = Number(opts.settle);

const dir = join(ROOT, "bench/out/backup");
rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
const db = join(dir, "gateway.db");
const configFile = join(dir, "gateway.toml");
// Loopback only; the access log (when the build has one) goes to the log file with the rest.
writeFileSync(configFile, '[server]\nhost = "127.0.0.1"\n');

function cli(args: string[]): string {
  const r = Bun.spawnSync(["bun", MAIN, ...args, "--config", configFile, "--db", db], { cwd: ROOT, stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`gateway ${args.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString();
}

function sqlite(file: string, sql: string): string {
  const r = Bun.spawnSync(["sqlite3", file, sql], { stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`sqlite3 ${sql}: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}

const mib = (file: string) => (existsSync(file) ? statSync(file).size / 2 ** 20 : 0);

// 1. A database with history: migrated, then synthetic request-log rows (no content, like real ones),
//    so that a copy takes more than a moment, as on a server that has run for a while.
cli(["migrate"]);
if (SEED_ROWS > 0) {
  sqlite(
    db,
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${SEED_ROWS})
     INSERT INTO request_logs (request_id, method, path, endpoint, model, provider, upstream_model, status,
       input_tokens, output_tokens, cost_nano, latency_ms, attempts, created_at)
     SELECT printf('gw_seed%09d', i), 'POST', '/v1/chat/completions', 'chat.completions', 'demo-text-1', 'demo',
       'demo-text-1', 200, 1000 + i % 500, 200 + i % 300, 1800000 + i % 7000, 300 + i % 900, 1,
       ${Date.now() - 30 * 86_400_000} + i * 8000 FROM n;`,
  );
}
const seededMib = mib(db);

// 2. The server, its demo key replaced by one with a high rpm (the default 20/min would refuse the load).
const logFile = join(dir, "serve.log");
const server = Bun.spawn(["bun", MAIN, "serve", "--config", configFile, "--db", db, "--port", "0", "--json"], {
  cwd: ROOT,
  stdout: Bun.file(logFile),
  stderr: Bun.file(join(dir, "serve.err")),
});
const started = await firstLine(logFile, 15_000);
const port = (JSON.parse(started) as { port: number }).port;
cli(["account", "credit", "--email", "demo@gateway.local", "--usd", "100000", "--note", "backup bench"]);
const key = (JSON.parse(cli(["key", "create", "--email", "demo@gateway.local", "--rpm", "100000000", "--name", "bench", "--json"])) as { key: string }).key;

// 3. Sustained load: CONC loops of small chat completions on the demo model, closed or paced.
const url = `http://127.0.0.1:${port}/v1/chat/completions`;
const body = JSON.stringify({ model: "demo-text-1", max_tokens: 32, messages: [{ role: "user", content: "Hello, backup." }] });
const done: { at: number; status: number }[] = [];
let running = true;
const loops = Array.from({ length: CONC }, async (_, i) => {
  // Paced: each loop starts a request every CONC/RATE seconds, the loops spread over that interval.
  const interval = RATE > 0 ? (CONC / RATE) * 1000 : 0;
  let next = performance.now() + (interval * i) / CONC;
  while (running) {
    if (interval > 0) {
      const wait = next - performance.now();
      if (wait > 0) await Bun.sleep(wait);
      next += interval;
    }
    try {
      const res = await fetch(url, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body });
      await res.arrayBuffer();
      done.push({ at: performance.now(), status: res.status });
    } catch {
      done.push({ at: performance.now(), status: 0 });
    }
  }
});

function window(from: number, to: number) {
  const inside = done.filter((d) => d.at >= from && d.at < to);
  const ok = inside.filter((d) => d.status === 200).length;
  return { requests: inside.length, ok, rps: Math.round(ok / ((to - from) / 1000)), refused: inside.length - ok };
}

await Bun.sleep(WARMUP_S * 1000);
const baseline = window(performance.now() - WARMUP_S * 500, performance.now());

interface Attempt {
  method: string;
  command: string;
  finished: boolean;
  seconds: number;
  copy_mib: number;
  integrity: string;
  ledger_mismatches: number | null;
  load: ReturnType<typeof window>;
}

async function timed(method: string, target: string, sql: string): Promise<Attempt> {
  rmSync(target, { force: true });
  const t0 = performance.now();
  const proc = Bun.spawn(["sqlite3", db, sql], { stdout: "pipe", stderr: "pipe" });
  const timer = setTimeout(() => proc.kill("SIGKILL"), TIMEOUT_S * 1000);
  const code = await proc.exited;
  clearTimeout(timer);
  const t1 = performance.now();
  const finished = code === 0 && existsSync(target);
  let integrity = "-";
  let mismatches: number | null = null;
  if (finished) {
    integrity = sqlite(target, "PRAGMA integrity_check");
    mismatches = Number(sqlite(target, RECONCILE_COUNT));
  }
  const attempt = { method, command: `sqlite3 DB "${sql}"`, finished, seconds: +((t1 - t0) / 1000).toFixed(2), copy_mib: +mib(target).toFixed(1), integrity, ledger_mismatches: mismatches, load: window(t0, t1) };
  console.log(JSON.stringify(attempt));
  await Bun.sleep(SETTLE_S * 1000);
  return attempt;
}

// docs/database.md's reconciliation, counted: 0 means every balance and every key's spend match their ledger rows.
const RECONCILE_COUNT = `SELECT
  (SELECT count(*) FROM accounts a WHERE a.balance_nano != (SELECT COALESCE(SUM(amount_nano), 0) FROM ledger_entries l WHERE l.account_id = a.id) OR a.balance_nano < 0)
+ (SELECT count(*) FROM api_keys k WHERE k.spent_nano != (SELECT COALESCE(-SUM(amount_nano), 0) FROM ledger_entries l WHERE l.key_id = k.id AND l.kind = 'charge'))`;

const dbMibAtStart = mib(db);
const attempts = [
  await timed("VACUUM INTO", join(dir, "backup.db"), `VACUUM INTO '${join(dir, "backup.db")}'`),
  await timed(".backup", join(dir, "backup2.db"), `.backup '${join(dir, "backup2.db")}'`),
];

running = false;
await Promise.all(loops);
server.kill("SIGTERM");
await server.exited;

const total = window(0, performance.now());
const result = {
  when: new Date().toISOString(),
  bun: Bun.version,
  sqlite3: Bun.spawnSync(["sqlite3", "--version"]).stdout.toString().split(" ")[0],
  seed_rows: SEED_ROWS,
  seeded_db_mib: +seededMib.toFixed(1),
  db_mib_at_backup: +dbMibAtStart.toFixed(1),
  conc: CONC,
  rate: RATE,
  timeout_s: TIMEOUT_S,
  baseline_load: baseline,
  attempts,
  requests_total: total.requests,
  requests_refused: total.refused,
  server_exit: server.exitCode,
};
writeFileSync(join(dir, "result.json"), JSON.stringify(result, null, 2));
const load = RATE > 0 ? `${RATE} req/s paced over ${CONC} loops` : `${CONC} closed loops`;
console.log(`\ndatabase ${result.db_mib_at_backup} MiB (${SEED_ROWS} seeded log rows), load ${load}, baseline ${baseline.rps} req/s`);
console.log("| method | finished | seconds | copy MiB | integrity_check | ledger mismatches | req/s during |");
console.log("|---|---|---:|---:|---|---:|---:|");
for (const a of attempts) {
  console.log(`| \`${a.method}\` | ${a.finished ? "yes" : `no (killed at ${TIMEOUT_S} s)`} | ${a.seconds} | ${a.copy_mib} | ${a.integrity} | ${a.ledger_mismatches ?? "-"} | ${a.load.rps} |`);
}
console.log(`requests: ${total.requests}, refused or failed: ${total.refused}; server exit ${server.exitCode}`);

async function firstLine(file: string, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const text = existsSync(file) ? readFileSync(file, "utf8") : "";
    if (text.includes("\n")) return text.slice(0, text.indexOf("\n"));
    if (server.exitCode !== null) break;
    await Bun.sleep(50);
  }
  throw new Error(`gateway serve printed nothing: ${readFileSync(join(dir, "serve.err"), "utf8")}`);
}
