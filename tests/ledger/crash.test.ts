import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import type { Subprocess } from "bun";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Keys } from "../../src/store/keys/sqlite.ts";
import { migrate, openDatabase, type Db } from "../../src/store/engine/sqlite/client.ts";
import { Accounts } from "../../src/store/accounts/sqlite.ts";
import { Ledger } from "../../src/store/ledger/sqlite.ts";
import { startMockUpstream, type MockUpstream } from "../support/mock-upstream.ts";
import { anthropicConfig, ROOT, startServe } from "../support/cli.ts";
import { usdToNanoShown } from "../support/prices.ts";

// Each test starts gateway processes; on a loaded 2-core machine that takes more than the default 5 s.
setDefaultTimeout(30_000);

// A real `gateway serve` process is killed with SIGKILL while streams hold reservations, then
// started again on the same database file (DESIGN: reservations outlive nothing). Holds live in the
// serving process, so they are read over HTTP (/v1/me) and die with it.
const OPENING = 10_000_000_000;
const STREAMS = 5;

let up: MockUpstream;
let dir: string;
let db: Db;
let account: { id: number; key: string; keyId: number };
const children = new Set<Subprocess>();

/** Starts `gateway serve --json` and resolves with its port and everything it printed before it. */
async function serve(): Promise<{ proc: Subprocess; port: number; printed: string[] }> {
  const s = startServe(["--port", "0", "--db", join(dir, "gateway.db"), "--config", join(dir, "gateway.toml"), "--json"], { cwd: ROOT });
  children.add(s.proc);
  const listening = (await s.until(/^(\{.*)\n/m))[1]!;
  return { proc: s.proc, port: (JSON.parse(listening) as { port: number }).port, printed: s.out.split("\n") };
}

const post = (port: number, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`http://127.0.0.1:${port}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": account.key, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
const ask = (stream: boolean) => ({ model: "claude-x", max_tokens: 1000, stream, messages: [{ role: "user", content: "count slowly" }] });

const one = <T>(sql: string, ...p: number[]) => db.$client.query(sql).get(...p) as T;
const money = () => ({
  balance: one<{ v: number }>("SELECT balance_nano AS v FROM accounts WHERE id = ?", account.id).v,
  ledgerSum: one<{ v: number }>("SELECT coalesce(sum(amount_nano), 0) AS v FROM ledger_entries WHERE account_id = ?", account.id).v,
  charges: one<{ v: number }>("SELECT count(*) AS v FROM ledger_entries WHERE account_id = ? AND kind = 'charge'", account.id).v,
});
/** What the serving process holds for the account and the key, in nano-dollars. */
const held = async (port: number) => {
  const me = (await (await fetch(`http://127.0.0.1:${port}/v1/me`, { headers: { "x-api-key": account.key } })).json()) as {
    key: { quota: { reserved_usd: number } };
    balance: { balance_usd: number; reserved_usd: number; spendable_usd: number };
  };
  return { account: usdToNanoShown(me.balance.reserved_usd), key: usdToNanoShown(me.key.quota.reserved_usd), spendable: usdToNanoShown(me.balance.spendable_usd) };
};

let beforeKill: ReturnType<typeof money>;
let heldBeforeKill: Awaited<ReturnType<typeof held>>;
let heldAfterRestart: Awaited<ReturnType<typeof held>>;
let secondServe: { code: number; stderr: string };
let afterKill: ReturnType<typeof money>;
let afterRestart: ReturnType<typeof money>;
let chargedBeforeKill = 0;
let restart: { port: number; printed: string[] };

beforeAll(async () => {
  up = await startMockUpstream();
  dir = mkdtempSync(join(tmpdir(), "gw-crash-"));
  // One Messages model, "claude-x", served by the mock.
  writeFileSync(join(dir, "gateway.toml"), anthropicConfig(up.url));
  db = openDatabase(join(dir, "gateway.db"));
  migrate(db);
  const acc = await new Accounts(db, new Ledger(db)).create("crash@test.local", { balanceNano: OPENING });
  const k = await new Keys(db).create(acc.id, { rpm: 1000 });
  account = { id: acc.id, key: k.key, keyId: k.record.id };

  const first = await serve();
  // Two requests complete and are charged before the crash.
  for (let i = 0; i < 2; i++) {
    const res = await post(first.port, ask(false));
    const body = (await res.json()) as { usage: { cost_usd: number } };
    chargedBeforeKill += usdToNanoShown(body.usage.cost_usd);
  }
  // Five streams, ten seconds each, hold reservations when the process dies; one carries an Idempotency-Key.
  for (let i = 0; i < STREAMS; i++) up.script({ kind: "slow_stream", events: 100, intervalMs: 100 });
  const streams = await Promise.all(
    Array.from({ length: STREAMS }, (_, i) => post(first.port, ask(true), i === 0 ? { "idempotency-key": "crash-1" } : {})),
  );
  const readers = streams.map((r) => r.body!.getReader());
  await Promise.all(readers.map((r) => r.read())); // every stream has started: its hold is taken
  beforeKill = money();
  heldBeforeKill = await held(first.port);
  secondServe = await serveAgainWhileRunning();
  first.proc.kill("SIGKILL");
  await first.proc.exited; // reaped: a zombie would still answer kill(pid, 0)
  await Promise.all(readers.map((r) => r.read().catch(() => null)));
  afterKill = money();
  restart = await serve();
  afterRestart = money();
  heldAfterRestart = await held(restart.port);
});

afterAll(async () => {
  for (const p of children) {
    p.kill("SIGKILL");
    await p.exited;
  }
  db?.$client.close();
  await up?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A second `gateway serve` on the database of the running one. */
async function serveAgainWhileRunning(): Promise<{ code: number; stderr: string }> {
  const s = startServe(["--port", "0", "--db", join(dir, "gateway.db"), "--config", join(dir, "gateway.toml")], { cwd: ROOT });
  children.add(s.proc);
  const code = await s.proc.exited;
  await s.exited();
  return { code, stderr: s.err };
}

describe("one server per database", () => {
  it("refuses a second gateway serve on the database of a running one, saying why", () => {
    expect(secondServe.code).toBe(2);
    expect(secondServe.stderr).toContain("another 'gateway serve' is running on the database");
  });
});

describe("a gateway killed with SIGKILL mid-request", () => {
  it("held the running streams' estimates on the account and the key", () => {
    expect(heldBeforeKill.account).toBeGreaterThan(0);
    expect(heldBeforeKill.key).toBe(heldBeforeKill.account);
    expect(heldBeforeKill.spendable).toBe(beforeKill.balance - heldBeforeKill.account);
  });

  it("had charged only the requests that completed", () => {
    expect(afterKill.charges).toBe(2);
    expect(afterKill.balance).toBe(OPENING - chargedBeforeKill);
  });
});

describe("the next start on the same database", () => {
  it("starts although the killed server held the database: its lock died with it", () => {
    expect(restart.port).toBeGreaterThan(0);
  });

  it("holds nothing of the dead process: the whole balance is spendable", () => {
    expect(heldAfterRestart).toEqual({ account: 0, key: 0, spendable: afterRestart.balance });
  });

  it("says at start that it released the killed request's idempotency claim", () => {
    expect(restart.printed.join("\n")).toContain("released 1 idempotency claim(s)");
  });

  it("charges nothing for the killed requests and nothing twice: balance = SUM(ledger rows)", () => {
    expect(afterRestart.charges).toBe(2);
    expect(afterRestart.balance).toBe(OPENING - chargedBeforeKill);
    expect(afterRestart.ledgerSum).toBe(afterRestart.balance);
  });

  it("serves again with the whole balance spendable", async () => {
    const res = await post(restart.port, ask(false));
    expect(res.status).toBe(200);
    const cost = usdToNanoShown(((await res.json()) as { usage: { cost_usd: number } }).usage.cost_usd);
    const m = money();
    expect(m.charges).toBe(3);
    expect((await held(restart.port)).account).toBe(0);
    expect(m.balance).toBe(OPENING - chargedBeforeKill - cost);
    expect(m.ledgerSum).toBe(m.balance);
  });

  it("runs a retry under the Idempotency-Key of a killed request instead of waiting for it", async () => {
    const started = performance.now();
    const res = await post(restart.port, ask(true), { "idempotency-key": "crash-1" });
    expect(res.status).toBe(200);
    expect(res.headers.get("idempotent-replayed")).toBeNull();
    expect(await res.text()).toContain("message_stop");
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});
