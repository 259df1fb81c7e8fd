// SQLite work of one gateway request, timed statement group by statement group, on a file in WAL
// mode exactly as the gateway opens it (synchronous = NORMAL). Run by `bun run bench --profile`;
// alone: `bun bench/sqlite-timing.ts [N]`. Prints a Markdown table (µs per call, median of 5 batches).
// Experiments: PRAGMAS="wal_autocheckpoint=0;…" adds pragmas, DBFILE=:memory: times the statements without I/O.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hashKey } from "../src/store/keys/contract.ts";
import { Keys } from "../src/store/keys/sqlite.ts";
import { migrate, openDatabase } from "../src/store/engine/sqlite/client.ts";
import { Accounts } from "../src/store/accounts/sqlite.ts";
import { Ledger } from "../src/store/ledger/sqlite.ts";
import type { Hold } from "../src/ledger/hold.ts";
import { usdToNano } from "../src/core/money.ts";
import { RequestLog } from "../src/store/request-log/sqlite.ts";
import type { LogRow } from "../src/store/request-log/contract.ts";

const N = Number(process.argv[2] ?? 4000);
const dir = mkdtempSync(join(tmpdir(), "gw-sqlite-"));
try {
  const db = openDatabase(process.env.DBFILE ?? join(dir, "gateway.db"));
  for (const p of (process.env.PRAGMAS ?? "").split(";").filter(Boolean)) db.$client.exec(`PRAGMA ${p}`);
  migrate(db);
  const ledger = new Ledger(db);
  const keys = new Keys(db);
  const logs = new RequestLog(db);
  const acc = await new Accounts(db, ledger).create("timing@gateway.local", { balanceNano: usdToNano(1_000_000) });
  const { key } = await keys.create(acc.id, { rpm: 1_000_000_000 });
  // As http/pipeline.ts authenticates a request: look the key up, then apply its refusals.
  const authenticate = () => keys.check(key, keys.lookup(key), { clientIp: () => "127.0.0.1" });
  const keyId = authenticate().id;

  let seq = 0;
  const row = (): LogRow => ({
    requestId: `gw_timing${++seq}`, accountId: acc.id, keyId, method: "POST", path: "/v1/chat/completions", endpoint: "chat.completions",
    model: "bench-gpt", provider: "mock-openai", upstreamModel: "gpt-bench", stream: false, status: 200, inputTokens: 120,
    outputTokens: 8, cacheReadTokens: 0, cacheWriteTokens: 0, costNano: 136_000, latencyMs: 1.2, attempts: 1,
  });

  const results: { what: string; us: number }[] = [];
  /** µs per call: median of 5 batches of N after one warm-up batch. */
  const time = (what: string, setup: () => void, fn: (i: number) => void) => {
    const batches: number[] = [];
    for (let b = 0; b < 6; b++) {
      setup();
      const t0 = performance.now();
      for (let i = 0; i < N; i++) fn(i);
      if (b > 0) batches.push(((performance.now() - t0) * 1000) / N);
    }
    batches.sort((a, b) => a - b);
    results.push({ what, us: batches[2]! });
  };

  // As the gateway commits them: the charge and its log row in one transaction.
  const settleAndLog = db.$client.transaction((h: Hold) => {
    ledger.charge(h, 136_000);
    h.close();
    logs.write(row());
  });
  const holds: Hold[] = [];
  const settleAll = () => {
    for (const h of holds.splice(0)) (ledger.charge(h, 100_000), h.close());
  };
  time("sha256 of the key (hashKey)", () => {}, () => hashKey(key));
  time("key lookup (lookup + check: hash + SELECT + checks)", () => {}, authenticate);
  time("reserve (one SELECT; the hold is kept in memory)", settleAll, (i) => holds.push(ledger.reserve(`gw_r${seq}_${i}`, acc.id, keyId, 200_000)));
  let toSettle: Hold[] = [];
  time(
    "settle (IMMEDIATE txn: SELECT, 2 UPDATE, INSERT)",
    () => {
      settleAll();
      toSettle = Array.from({ length: N }, (_, i) => ledger.reserve(`gw_s${++seq}_${i}`, acc.id, keyId, 200_000));
    },
    (i) => (ledger.charge(toSettle[i]!, 136_000), toSettle[i]!.close()),
  );
  time("request log row (INSERT OR REPLACE)", () => {}, () => logs.write(row()));
  time(
    "all of one request (auth, reserve, then settle + log in one txn)",
    () => {},
    (i) => {
      const k = authenticate();
      const h = ledger.reserve(`gw_all${seq}_${i}`, acc.id, k.id, 200_000);
      settleAndLog(h);
    },
  );
  settleAll();
  db.$client.close();
  console.log(
    [`SQLite on a WAL file (synchronous = NORMAL), ${N} calls × 5 batches, median µs per call:`, "", "| work | µs per call |", "|---|---:|",
      ...results.map((r) => `| ${r.what} | ${r.us.toFixed(1)} |`)].join("\n"),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
