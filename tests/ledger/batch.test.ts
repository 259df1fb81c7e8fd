import { afterEach, beforeEach, describe, expect, it } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { Keys } from "../../src/store/keys/sqlite.ts";
import { migrate, openDatabase, SERVER_BUSY_TIMEOUT_MS, type Db } from "../../src/store/engine/sqlite/client.ts";
import { changeWatch } from "../../src/store/engine/sqlite/change-watch.ts";
import { asGatewayError } from "../../src/core/errors.ts";
import { Accounts } from "../../src/store/accounts/sqlite.ts";
import { Ledger } from "../../src/store/ledger/sqlite.ts";
import { GroupCommit } from "../../src/store/commits/sqlite.ts";
import { RequestLog } from "../../src/store/request-log/sqlite.ts";
import type { LogRow } from "../../src/store/request-log/contract.ts";

// The group commit's writes take no savepoint: a failing one rolls the batch back and the others run
// again (store/commits/sqlite.ts). The books must come out as if the failing request alone had failed.
// A charge in the batch caps at the ledger's copy of the balance: it must be the row's value.

const USD = 1_000_000_000;
let dir: string;
let db: Db;
let commits: GroupCommit;
let ledger: Ledger;
let logs: RequestLog;
let told: string[];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "gw-batch-fail-"));
  // As the server opens it: a statement waits at most 10 ms for another process's lock.
  db = openDatabase(join(dir, "gateway.db"), { busyTimeoutMs: SERVER_BUSY_TIMEOUT_MS });
  migrate(db);
  commits = new GroupCommit(db.$client);
  ledger = new Ledger(db, commits);
  told = [];
  logs = new RequestLog(db, { commits, onRow: (r) => told.push(r.requestId) });
});
afterEach(() => {
  db.$client.close();
  rmSync(dir, { recursive: true, force: true });
});

async function account(usd: number) {
  const acc = await new Accounts(db, ledger).create(`f${Math.random()}@test.local`, { balanceNano: usd * USD });
  const key = (await new Keys(db).create(acc.id, {})).record;
  return { accountId: acc.id, keyId: key.id };
}
const books = (accountId: number, keyId: number) =>
  db.$client
    .query("SELECT balance_nano AS balance, (SELECT sum(amount_nano) FROM ledger_entries WHERE account_id = ?1) AS sum, (SELECT spent_nano FROM api_keys WHERE id = ?2) AS spent FROM accounts WHERE id = ?1")
    .get(accountId, keyId) as { balance: number; sum: number; spent: number };
const logged = () => (db.$client.query("SELECT request_id AS id FROM request_logs ORDER BY request_id").all() as { id: string }[]).map((r) => r.id);
const row = (requestId: string, a: { accountId: number; keyId: number }): LogRow => ({ requestId, accountId: a.accountId, keyId: a.keyId, method: "POST", path: "/v1/chat/completions", status: 200, latencyMs: 1 });

describe("a failing charge in the middle of a batch", () => {
  it("fails that request alone: the others are charged and logged, and the balance is the ledger's sum", async () => {
    const a = await account(1);
    db.$client.run("CREATE TEMP TRIGGER refuse_one BEFORE INSERT ON ledger_entries WHEN NEW.request_id = 'gw_p2' BEGIN SELECT RAISE(ABORT, 'refused'); END");
    const holds = [1, 2, 3].map((i) => ledger.reserve(`gw_p${i}`, a.accountId, a.keyId, 1000));
    const results = await Promise.allSettled(holds.map((h) => h.post(100_000_000, () => logs.write(row(h.requestId, a)))));
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(books(a.accountId, a.keyId)).toEqual({ balance: 800_000_000, sum: 800_000_000, spent: 200_000_000 });
    expect(ledger.balance(a.accountId).balanceNano).toBe(800_000_000);
    expect(logged()).toEqual(["gw_p1", "gw_p3"]);
  });

  it("tells the access log of each written row once, though the batch wrote it twice", async () => {
    const a = await account(1);
    db.$client.run("CREATE TEMP TRIGGER refuse_one BEFORE INSERT ON ledger_entries WHEN NEW.request_id = 'gw_t2' BEGIN SELECT RAISE(ABORT, 'refused'); END");
    const holds = [1, 2].map((i) => ledger.reserve(`gw_t${i}`, a.accountId, a.keyId, 1000));
    await Promise.allSettled(holds.map((h) => h.post(1_000_000, () => logs.write(row(h.requestId, a)))));
    expect(told).toEqual(["gw_t1"]);
  });

  it("charges the batch's later requests against the balance without the failed one's charge", async () => {
    const a = await account(1);
    // The second request's log row fails after its charge: that charge is undone with it.
    const failing = () => {
      throw new Error("log row refused");
    };
    const holds = [1, 2, 3].map((i) => ledger.reserve(`gw_c${i}`, a.accountId, a.keyId, 1000));
    const results = await Promise.allSettled([holds[0]!.post(400_000_000), holds[1]!.post(500_000_000, failing), holds[2]!.post(600_000_000)]);
    expect(results.map((r) => (r.status === "fulfilled" ? r.value : "failed"))).toEqual([
      { chargedNano: 400_000_000, shortfallNano: 0 },
      "failed",
      { chargedNano: 600_000_000, shortfallNano: 0 },
    ]);
    expect(books(a.accountId, a.keyId)).toEqual({ balance: 0, sum: 0, spent: USD });
  });

  it("keeps an operator's credit and debit made in the same turn as the charges", async () => {
    const a = await account(1);
    const accounts = new Accounts(db, ledger);
    db.$client.run("CREATE TEMP TRIGGER refuse_one BEFORE INSERT ON ledger_entries WHEN NEW.request_id = 'gw_o3' BEGIN SELECT RAISE(ABORT, 'refused'); END");
    const holds = [1, 2, 3].map((i) => ledger.reserve(`gw_o${i}`, a.accountId, a.keyId, 1000));
    const pending = [holds[0]!.post(100_000_000)];
    // While the batch is open: they join it, unknown to the group commit.
    ledger.credit(a.accountId, 50_000_000, "operator_credit", "goodwill");
    const debited = accounts.debit(a.accountId, 20_000_000, "correction");
    pending.push(holds[1]!.post(100_000_000), holds[2]!.post(100_000_000));
    const results = await Promise.allSettled([...pending, debited]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
    expect(books(a.accountId, a.keyId)).toEqual({ balance: 830_000_000, sum: 830_000_000, spent: 200_000_000 });
    const kinds = db.$client.query("SELECT kind, count(*) AS n FROM ledger_entries WHERE account_id = ? GROUP BY kind ORDER BY kind").all(a.accountId);
    expect(kinds).toEqual([
      { kind: "charge", n: 2 },
      { kind: "operator_credit", n: 1 },
      { kind: "operator_debit", n: 1 },
      { kind: "registration_credit", n: 1 },
    ]);
  });
});

describe("the balance a charge in a batch caps at", () => {
  it("is what another process committed after this turn's reserve read it and before the batch began", async () => {
    const a = await account(1);
    const hold = ledger.reserve("gw_x1", a.accountId, a.keyId, 1000);
    // The CLI's debit, committed in the gap: the ledger's copy, read by the reserve this turn, is now stale.
    const cli = new Database(join(dir, "gateway.db"), { strict: true });
    cli.transaction(() => {
      cli.run("INSERT INTO ledger_entries (account_id, kind, amount_nano, created_at) VALUES (?, 'operator_debit', ?, 0)", [a.accountId, -900_000_000]);
      cli.run("UPDATE accounts SET balance_nano = balance_nano - 900000000 WHERE id = ?", [a.accountId]);
    })();
    cli.close();
    expect(await hold.post(500_000_000)).toEqual({ chargedNano: 100_000_000, shortfallNano: 400_000_000 });
    expect(books(a.accountId, a.keyId)).toEqual({ balance: 0, sum: 0, spent: 100_000_000 });
  });

  it("is what the batch's earlier charges and an operator's debit on this connection left", async () => {
    const a = await account(1);
    const holds = [1, 2].map((i) => ledger.reserve(`gw_y${i}`, a.accountId, a.keyId, 1000));
    const first = holds[0]!.post(300_000_000);
    await new Accounts(db, ledger).debit(a.accountId, 600_000_000, "correction");
    const second = holds[1]!.post(300_000_000);
    expect(await Promise.all([first, second])).toEqual([
      { chargedNano: 300_000_000, shortfallNano: 0 },
      { chargedNano: 100_000_000, shortfallNano: 200_000_000 },
    ]);
    expect(books(a.accountId, a.keyId)).toEqual({ balance: 0, sum: 0, spent: 400_000_000 });
  });
});

describe("a batch run again after a failing charge, when another process takes the write lock in between", () => {
  /**
   * Another connection (the CLI crediting an account) that takes the write lock at the one moment it
   * is free during the replay: after the batch's ROLLBACK, before its new BEGIN IMMEDIATE (the
   * in-memory copies are forgotten there, with no transaction open).
   */
  function lockTakenAtReplay() {
    const cli = new Database(join(dir, "gateway.db"), { strict: true });
    cli.exec("PRAGMA busy_timeout = 0");
    let armed = true;
    let taken = false;
    changeWatch(db.$client).onChange(() => {
      if (!armed || db.$client.inTransaction) return;
      armed = false;
      cli.exec("BEGIN IMMEDIATE");
      taken = true;
    });
    return {
      taken: () => taken,
      release() {
        cli.exec("ROLLBACK");
        cli.close();
      },
    };
  }

  /**
   * Two charges of 0.1 USD in a batch, then a third refused by the database; the lock is taken as the
   * two run again. (A write after the failing one would start a batch of its own, waiting for the lock.)
   */
  async function failedReplay() {
    const a = await account(1);
    db.$client.run("CREATE TEMP TRIGGER refuse_one BEFORE INSERT ON ledger_entries WHEN NEW.request_id = 'gw_r3' BEGIN SELECT RAISE(ABORT, 'refused'); END");
    const holds = [1, 2, 3].map((i) => ledger.reserve(`gw_r${i}`, a.accountId, a.keyId, 1000));
    const cli = lockTakenAtReplay();
    const posted = holds.map((h) => h.post(100_000_000, () => logs.write(row(h.requestId, a))));
    // Read as each waiter resumes: its hold must be gone by then (let go before the waiter is told).
    const heldAtWaiter: boolean[] = [];
    const results = await Promise.allSettled(posted.map((p, i) => p.finally(() => (heldAtWaiter[i] = ledger.holds.list().includes(holds[i]!)))));
    return { a, cli, results, heldAtWaiter };
  }

  it("fails every write of the batch with SQLITE_BUSY (a 503), lets every hold go and writes nothing of them", async () => {
    const { a, cli, results, heldAtWaiter } = await failedReplay();
    try {
      expect(cli.taken()).toBe(true);
      const codes = results.map((r) => (r.status === "rejected" ? String((r.reason as { code?: string }).code ?? (r.reason as Error).message) : "committed"));
      expect(codes).toEqual(["SQLITE_BUSY", "SQLITE_BUSY", expect.stringMatching(/CONSTRAINT|refused/)]);
      const busy = asGatewayError((results[0] as PromiseRejectedResult).reason);
      expect([busy.status, busy.code]).toEqual([503, "database_unavailable"]);
      expect(heldAtWaiter).toEqual([false, false, false]);
      expect(ledger.holds.account(a.accountId)).toBe(0);
      expect(db.$client.inTransaction).toBe(false);
    } finally {
      cli.release();
    }
    expect(books(a.accountId, a.keyId)).toEqual({ balance: USD, sum: USD, spent: 0 });
    expect(logged()).toEqual([]);
  });

  it("tells the access log and metrics of none of the batch's rows", async () => {
    const { cli } = await failedReplay();
    cli.release();
    expect(told).toEqual([]);
  });

  it("commits the next batch as usual once the other process lets go of the lock", async () => {
    const { a, cli } = await failedReplay();
    cli.release();
    const hold = ledger.reserve("gw_r4", a.accountId, a.keyId, 1000);
    expect(await hold.post(100_000_000, () => logs.write(row("gw_r4", a)))).toEqual({ chargedNano: 100_000_000, shortfallNano: 0 });
    expect(books(a.accountId, a.keyId)).toEqual({ balance: 900_000_000, sum: 900_000_000, spent: 100_000_000 });
    expect(logged()).toEqual(["gw_r4"]);
    expect(commits.failing).toBeNull();
  });
});

describe("the rows the access log and metrics are told of", () => {
  /** Charges with their log rows in one batch, their waiters settled. */
  async function batch(ids: string[]) {
    const a = await account(1);
    const holds = ids.map((id) => ledger.reserve(id, a.accountId, a.keyId, 1000));
    return Promise.allSettled(holds.map((h) => h.post(1_000_000, () => logs.write(row(h.requestId, a)))));
  }

  it("are none of a batch whose COMMIT fails", async () => {
    // A deferred foreign key is checked at the COMMIT: the batch's writes all ran, then it fails.
    db.$client.run("CREATE TABLE dangling (id INTEGER PRIMARY KEY, ref INTEGER REFERENCES dangling(id) DEFERRABLE INITIALLY DEFERRED)");
    db.$client.run("CREATE TEMP TRIGGER unsettled AFTER INSERT ON request_logs WHEN NEW.request_id = 'gw_c2' BEGIN INSERT INTO dangling (ref) VALUES (-1); END");
    const results = await batch(["gw_c1", "gw_c2"]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    expect(logged()).toEqual([]);
    expect(told).toEqual([]);
  });

  it("are none of a batch that SQLite rolled back under a row's failed write (a full disk)", async () => {
    // The row's write fails quietly (a log row never fails its request), and its batch is gone with it.
    db.$client.run("CREATE TEMP TRIGGER full BEFORE INSERT ON request_logs WHEN NEW.request_id = 'gw_d2' BEGIN SELECT RAISE(ROLLBACK, 'disk full'); END");
    const results = await batch(["gw_d1", "gw_d2"]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    expect(logged()).toEqual([]);
    expect(told).toEqual([]);
  });

  it("are each row of a committed batch once, in the order written, after the COMMIT and before the waiters", async () => {
    const seen: { id: string; inTransaction: boolean }[] = [];
    logs = new RequestLog(db, { commits, onRow: (r) => seen.push({ id: r.requestId, inTransaction: db.$client.inTransaction }) });
    const a = await account(1);
    const holds = ["gw_o1", "gw_o2", "gw_o3"].map((id) => ledger.reserve(id, a.accountId, a.keyId, 1000));
    const atWaiter: number[] = [];
    const posted = holds.map((h) => h.post(1_000_000, () => logs.write(row(h.requestId, a))).then(() => atWaiter.push(seen.length)));
    expect(seen).toEqual([]);
    await Promise.all(posted);
    expect(seen).toEqual(["gw_o1", "gw_o2", "gw_o3"].map((id) => ({ id, inTransaction: false })));
    expect(atWaiter).toEqual([3, 3, 3]);
  });

  it("are the failure's own row, not the row of the batch that failed, when a request is logged again under its id", async () => {
    db.$client.run("CREATE TEMP TRIGGER full BEFORE INSERT ON request_logs WHEN NEW.status = 200 BEGIN SELECT RAISE(ROLLBACK, 'disk full'); END");
    const a = await account(1);
    const [result] = await batch(["gw_f1"]);
    expect(result!.status).toBe("rejected");
    await commits.run(() => logs.write({ ...row("gw_f1", a), status: 503, errorCode: "database_unavailable" }));
    expect(told).toEqual(["gw_f1"]);
    expect(db.$client.query("SELECT status FROM request_logs WHERE request_id = 'gw_f1'").all()).toEqual([{ status: 503 }]);
  });

  /** A write that writes its row, then fails. */
  const failsAfterItsRow = (r: LogRow) => () => {
    logs.write(r);
    throw new Error("refused after its row");
  };

  it("are none of a write that failed after writing its row, the batch run again without it", async () => {
    const a = await account(1);
    const results = await Promise.allSettled([commits.run(() => logs.write(row("gw_s1", a))), commits.run(failsAfterItsRow(row("gw_s2", a)))]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected"]);
    expect(logged()).toEqual(["gw_s1"]);
    expect(told).toEqual(["gw_s1"]);
  });

  it("are none of a write that failed after writing its row under a savepoint of its own", async () => {
    const a = await account(1);
    const first = commits.run(() => logs.write(row("gw_v1", a)));
    // A row written beside the group commit in the open batch: every later write takes a savepoint.
    logs.write(row("gw_v2", a));
    const results = await Promise.allSettled([first, commits.run(failsAfterItsRow(row("gw_v3", a)))]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected"]);
    expect(logged()).toEqual(["gw_v1", "gw_v2"]);
    expect(told).toEqual(["gw_v1", "gw_v2"]);
  });

  it("are told at once of a row written with no batch open (the CLI's)", () => {
    const a = { accountId: 1, keyId: 1 };
    new RequestLog(db, { commits, onRow: (r) => told.push(r.requestId) }).write({ ...row("gw_n1", a), accountId: null, keyId: null });
    expect(told).toEqual(["gw_n1"]);
  });
});
