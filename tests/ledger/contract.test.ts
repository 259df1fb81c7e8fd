import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import type { SQL } from "bun";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Keys } from "../../src/store/keys/sqlite.ts";
import { migrate, openDatabase } from "../../src/store/engine/sqlite/client.ts";
import { GroupCommit } from "../../src/store/commits/sqlite.ts";
import { migratePostgres } from "../../src/store/engine/postgres/client.ts";
import { Accounts } from "../../src/store/accounts/sqlite.ts";
import { HoldResolvedTwice, type Hold } from "../../src/ledger/hold.ts";
import { Ledger } from "../../src/store/ledger/sqlite.ts";
import type { MoneyLedger } from "../../src/store/ledger/contract.ts";
import { PgLedger } from "../../src/store/ledger/postgres.ts";
import { events } from "../../src/core/events.ts";
import { startPostgres, type TestPostgres } from "../support/postgres.ts";

// One ledger, two implementations: every behaviour below holds on SQLite (holds in the serving
// process) and on PostgreSQL (holds as rows shared by several instances). The PostgreSQL suite is
// never skipped: CI installs postgresql (.ci/run).

const USD = 1_000_000_000;

interface Subject {
  /** The ledgers spending the same database: one on SQLite (one serving process), two on PostgreSQL. */
  ledgers: MoneyLedger[];
  account(usd: number, quotaNano?: number | null): Promise<{ accountId: number; keyId: number }>;
  key(accountId: number, quotaNano?: number | null): Promise<number>;
  /** The ledger entries' sum and kinds, and the database's open holds, of one account. */
  entries(accountId: number): Promise<{ kind: string; amount: number; shortfall: number }[]>;
  openHolds(accountId: number): Promise<number>;
}

let seq = 0;
const email = () => `c${process.pid}-${++seq}@test.local`;

function sqliteSubject(): { subject: Subject; close(): void } {
  const dir = mkdtempSync(join(tmpdir(), "gw-contract-"));
  const db = openDatabase(join(dir, "gateway.db"));
  migrate(db);
  const ledger = new Ledger(db, new GroupCommit(db.$client));
  const keys = new Keys(db);
  const subject: Subject = {
    ledgers: [ledger],
    async account(usd, quotaNano = null) {
      const acc = await new Accounts(db, ledger).create(email(), { balanceNano: usd * USD });
      return { accountId: acc.id, keyId: (await keys.create(acc.id, { quotaNano })).record.id };
    },
    async key(accountId, quotaNano = null) {
      return (await keys.create(accountId, { quotaNano })).record.id;
    },
    async entries(accountId) {
      return db.$client.query("SELECT kind, amount_nano AS amount, shortfall_nano AS shortfall FROM ledger_entries WHERE account_id = ? ORDER BY id").all(accountId) as never;
    },
    async openHolds(accountId) {
      return ledger.holds.list().filter((h) => h.accountId === accountId).length;
    },
  };
  return { subject, close: () => (db.$client.close(), rmSync(dir, { recursive: true, force: true })) };
}

/** Accounts and keys written as rows (their owners' PostgreSQL side comes later); money only through the ledger. */
function pgSubject(sql: SQL, ledgers: PgLedger[]): Subject {
  const key = async (accountId: number, quotaNano: number | null = null) => {
    const [k] = await sql`INSERT INTO api_keys (account_id, prefix, key_hash, quota_nano, created_at)
      VALUES (${accountId}, 'gw-test', ${`hash-${++seq}`}, ${quotaNano}, ${Date.now()}) RETURNING id`;
    return Number(k.id);
  };
  return {
    ledgers,
    async account(usd, quotaNano = null) {
      const [a] = await sql`INSERT INTO accounts (email, created_at) VALUES (${email()}, ${Date.now()}) RETURNING id`;
      const accountId = Number(a.id);
      if (usd > 0) await ledgers[0]!.credit(accountId, usd * USD, "operator_credit");
      return { accountId, keyId: await key(accountId, quotaNano) };
    },
    key,
    async entries(accountId) {
      const rows = await sql`SELECT kind, amount_nano, shortfall_nano FROM ledger_entries WHERE account_id = ${accountId} ORDER BY id`;
      return rows.map((r: Record<string, string>) => ({ kind: r.kind, amount: Number(r.amount_nano), shortfall: Number(r.shortfall_nano) }));
    },
    async openHolds(accountId) {
      const [r] = await sql`SELECT count(*)::int AS n FROM holds WHERE account_id = ${accountId}`;
      return r.n;
    },
  };
}

/** What a refused promise or throw carried. */
async function refusal(p: () => unknown): Promise<{ status: number; code: string; headers?: Record<string, string> }> {
  try {
    await p();
  } catch (e) {
    return e as never;
  }
  throw new Error("not refused");
}

const sum = (rows: { amount: number }[]) => rows.reduce((s, r) => s + r.amount, 0);

function contract(name: string, open: () => Promise<{ subject: Subject; close(): Promise<void> | void }>): void {
  describe(`the ledger on ${name}`, () => {
    let s: Subject;
    let ledger: MoneyLedger;
    let close: () => Promise<void> | void;
    beforeAll(async () => {
      ({ subject: s, close } = await open());
      ledger = s.ledgers[0]!;
    });
    afterAll(() => close());

    it("holds a reserve within the balance on the account and the key, lowering spendable but not the balance", async () => {
      const a = await s.account(1);
      await ledger.reserve("gw_c1", a.accountId, a.keyId, 300_000_000);
      expect(await ledger.balance(a.accountId)).toEqual({ balanceNano: USD, reservedNano: 300_000_000, spendableNano: 700_000_000 });
      expect(await ledger.keySpend(a.keyId)).toEqual({ spentNano: 0, reservedNano: 300_000_000, budget: null });
      expect(await s.openHolds(a.accountId)).toBe(1);
    });

    it("refuses a reserve beyond the spendable balance with 402 insufficient_balance, holding nothing", async () => {
      const a = await s.account(1);
      await ledger.reserve("gw_c1", a.accountId, a.keyId, 600_000_000);
      const e = await refusal(() => ledger.reserve("gw_c2", a.accountId, a.keyId, 500_000_000));
      expect([e.status, e.code]).toEqual([402, "insufficient_balance"]);
      expect((await ledger.balance(a.accountId)).reservedNano).toBe(600_000_000);
      expect((await ledger.keySpend(a.keyId))!.reservedNano).toBe(600_000_000);
      expect(await s.openHolds(a.accountId)).toBe(1);
    });

    it("refuses a reserve beyond the key's quota with 429 quota and x-should-retry: false, holding nothing", async () => {
      const a = await s.account(10, 500_000_000);
      await ledger.reserve("gw_c1", a.accountId, a.keyId, 300_000_000);
      const e = await refusal(() => ledger.reserve("gw_c2", a.accountId, a.keyId, 300_000_000));
      expect([e.status, e.code, e.headers?.["x-should-retry"]]).toEqual([429, "quota", "false"]);
      expect((await ledger.balance(a.accountId)).reservedNano).toBe(300_000_000);
      expect(await s.openHolds(a.accountId)).toBe(1);
    });

    it("charges exactly the cost on post, with one charge entry, and releases the hold", async () => {
      const a = await s.account(1);
      const h = await ledger.reserve("gw_c1", a.accountId, a.keyId, 300_000_000);
      expect(await h.post(123_456_789)).toEqual({ chargedNano: 123_456_789, shortfallNano: 0 });
      expect(await ledger.balance(a.accountId)).toEqual({ balanceNano: USD - 123_456_789, reservedNano: 0, spendableNano: USD - 123_456_789 });
      expect(await ledger.keySpend(a.keyId)).toEqual({ spentNano: 123_456_789, reservedNano: 0, budget: null });
      expect((await s.entries(a.accountId)).at(-1)).toEqual({ kind: "charge", amount: -123_456_789, shortfall: 0 });
      expect(await s.openHolds(a.accountId)).toBe(0);
    });

    it("caps a charge at the balance and records the rest as shortfall, never going negative", async () => {
      const a = await s.account(1);
      const h = await ledger.reserve("gw_c1", a.accountId, a.keyId, 100_000_000);
      expect(await h.post(3 * USD)).toEqual({ chargedNano: USD, shortfallNano: 2 * USD });
      expect((await ledger.balance(a.accountId)).balanceNano).toBe(0);
      expect((await s.entries(a.accountId)).at(-1)).toEqual({ kind: "charge", amount: -USD, shortfall: 2 * USD });
    });

    it("caps a charge at what the key's quota has left", async () => {
      const a = await s.account(10, 500_000_000);
      const h = await ledger.reserve("gw_c1", a.accountId, a.keyId, 100_000_000);
      expect(await h.post(USD)).toEqual({ chargedNano: 500_000_000, shortfallNano: 500_000_000 });
      expect((await ledger.keySpend(a.keyId))!.spentNano).toBe(500_000_000);
    });

    it("writes no entry for a post that costs nothing, and releases the hold", async () => {
      const a = await s.account(1);
      const before = (await s.entries(a.accountId)).length;
      await (await ledger.reserve("gw_c1", a.accountId, a.keyId, 100_000_000)).post(0);
      expect((await s.entries(a.accountId)).length).toBe(before);
      expect(await ledger.balance(a.accountId)).toEqual({ balanceNano: USD, reservedNano: 0, spendableNano: USD });
    });

    it("releases a voided hold uncharged", async () => {
      const a = await s.account(1);
      (await ledger.reserve("gw_c1", a.accountId, a.keyId, USD)).void("upstream_failed");
      await settled(s);
      expect(await ledger.balance(a.accountId)).toEqual({ balanceNano: USD, reservedNano: 0, spendableNano: USD });
      expect(await ledger.reserve("gw_c2", a.accountId, a.keyId, USD)).toBeDefined();
    });

    it("resolves a hold exactly once: a second post or a void after a post throws", async () => {
      const a = await s.account(1);
      const h = await ledger.reserve("gw_c1", a.accountId, a.keyId, 100_000_000);
      await h.post(1_000);
      expect(() => h.post(1_000)).toThrow(HoldResolvedTwice);
      expect(() => h.void("late")).toThrow(HoldResolvedTwice);
      h.close();
      expect((await ledger.keySpend(a.keyId))!.spentNano).toBe(1_000);
    });

    it("lets the hold go uncharged when what is posted alongside fails", async () => {
      const a = await s.account(1);
      const h = await ledger.reserve("gw_c1", a.accountId, a.keyId, 100_000_000);
      await expect(h.post(5_000, () => { throw new Error("log row refused"); })).rejects.toThrow("log row refused");
      await settled(s);
      expect(await ledger.balance(a.accountId)).toEqual({ balanceNano: USD, reservedNano: 0, spendableNano: USD });
      expect(await s.entries(a.accountId)).toHaveLength(1);
    });

    it("credits a payment once per external_ref", async () => {
      const a = await s.account(0);
      const ref = `evt_${process.pid}_${++seq}`;
      expect(await ledger.credit(a.accountId, 5 * USD, "top_up", "Stripe", ref)).toBe(true);
      expect(await ledger.credit(a.accountId, 5 * USD, "top_up", "Stripe", ref)).toBe(false);
      expect((await ledger.balance(a.accountId)).balanceNano).toBe(5 * USD);
    });

    it("refuses a credit that is not a positive whole number of nano-dollars", async () => {
      const a = await s.account(0);
      await expect(async () => ledger.credit(a.accountId, 1.5, "operator_credit")).toThrow(RangeError);
      await expect(async () => ledger.credit(a.accountId, 0, "operator_credit")).toThrow(RangeError);
    });

    it("refuses a credit that would take the balance past 9007199.254740991 USD (2^53 - 1 nano-dollars), writing nothing", async () => {
      const a = await s.account(0);
      expect(await ledger.credit(a.accountId, Number.MAX_SAFE_INTEGER - 1, "operator_credit")).toBe(true);
      // One more nano-dollar is the last one a JavaScript number holds exactly; two are past it.
      const e = await refusal(() => ledger.credit(a.accountId, 2, "top_up", "Stripe", `pi_${process.pid}_${++seq}`));
      expect(e.code).toBe("invalid_request");
      expect((e as unknown as Error).message).toContain("9007199.254740991 USD");
      expect((await ledger.balance(a.accountId)).balanceNano).toBe(Number.MAX_SAFE_INTEGER - 1);
      expect(await s.entries(a.accountId)).toEqual([{ kind: "operator_credit", amount: Number.MAX_SAFE_INTEGER - 1, shortfall: 0 }]);
      expect(await ledger.credit(a.accountId, 1, "operator_credit")).toBe(true);
      expect((await ledger.balance(a.accountId)).balanceNano).toBe(Number.MAX_SAFE_INTEGER);
    });

    it("refuses a reserve on a key that does not exist, holding nothing", async () => {
      const a = await s.account(1);
      const e = await refusal(() => ledger.reserve("gw_c1", a.accountId, 987_654_321, 1_000));
      expect(e.code).toBe("no-key");
      expect(await ledger.balance(a.accountId)).toEqual({ balanceNano: USD, reservedNano: 0, spendableNano: USD });
    });

    it("knows no key by an unknown id", async () => {
      expect(await ledger.keySpend(987_654_321)).toBeNull();
    });

    it("keeps the balance equal to the sum of its entries through credits, charges and shortfalls", async () => {
      const a = await s.account(2);
      await ledger.credit(a.accountId, USD, "operator_credit");
      await (await ledger.reserve("gw_c1", a.accountId, a.keyId, USD)).post(700_000_000);
      await (await ledger.reserve("gw_c2", a.accountId, a.keyId, USD)).post(5 * USD);
      const b = await ledger.balance(a.accountId);
      expect(b.balanceNano).toBe(sum(await s.entries(a.accountId)));
      expect(b.balanceNano).toBe(0);
    });

    it("grants exactly 100 of 300 concurrent reserves over several keys when the balance covers 100, and leaves no hold", async () => {
      const a = await s.account(100);
      const keyIds = [a.keyId, ...(await Promise.all([1, 2, 3, 4].map(() => s.key(a.accountId))))];
      const tries = Array.from({ length: 300 }, (_, i) =>
        (async () => s.ledgers[i % s.ledgers.length]!.reserve(`gw_p${i}`, a.accountId, keyIds[i % keyIds.length]!, USD))().then(
          (h) => h,
          (e: { status: number }) => e.status,
        ),
      );
      const results = await Promise.all(tries);
      const granted = results.filter((r): r is Hold => typeof r === "object");
      expect(granted).toHaveLength(100);
      expect(results.filter((r) => r === 402)).toHaveLength(200);
      expect((await ledger.balance(a.accountId)).spendableNano).toBe(0);
      // Half charged what they held, half voided: the balance pays for 50, no hold stays behind.
      await Promise.all(granted.map((h, i) => (i % 2 === 0 ? h.post(USD) : h.void("failed"))));
      await settled(s);
      expect(await ledger.balance(a.accountId)).toEqual({ balanceNano: 50 * USD, reservedNano: 0, spendableNano: 50 * USD });
      expect(sum(await s.entries(a.accountId))).toBe(50 * USD);
      expect(await s.openHolds(a.accountId)).toBe(0);
      for (const k of keyIds) expect((await ledger.keySpend(k))!.reservedNano).toBe(0);
    });
  });
}

async function settled(s: Subject): Promise<void> {
  for (const l of s.ledgers) if (l instanceof PgLedger) await l.settled();
}

contract("SQLite", async () => sqliteSubject());

let pg: TestPostgres;
const pools: SQL[] = [];
const started: PgLedger[] = [];
let dbs = 0;

/** A fresh migrated database; `n` ledger instances on it, each on its own pool. */
async function pgLedgers(n: number, opts: { holdTimeoutMs?: number; heartbeatMs?: number } = {}): Promise<{ sql: SQL; ledgers: PgLedger[] }> {
  pg ??= await startPostgres();
  const url = await pg.createDatabase(`contract_${++dbs}`);
  await migratePostgres(url);
  const ledgers: PgLedger[] = [];
  for (let i = 0; i < n; i++) {
    const sql = new Bun.SQL({ url, max: 10 });
    pools.push(sql);
    const l = await PgLedger.start(sql, { instanceId: `gw-${dbs}-${i}`, holdTimeoutMs: opts.holdTimeoutMs ?? 30_000, heartbeatMs: opts.heartbeatMs });
    started.push(l);
    ledgers.push(l);
  }
  return { sql: pools.at(-n)!, ledgers };
}

afterAll(async () => {
  for (const l of started) await l.stop();
  for (const p of pools) await p.close();
  await pg?.stop();
});

contract("PostgreSQL, two instances", async () => {
  const { sql, ledgers } = await pgLedgers(2);
  return { subject: pgSubject(sql, ledgers), close: () => {} };
});

describe("holds on PostgreSQL, instance by instance", () => {
  const TIMEOUT = 1_000;
  let sql: SQL;
  let live: PgLedger;
  let silent: PgLedger;
  let s: Subject;
  let lines: string[];
  let restore: () => void;
  beforeAll(async () => {
    let ledgers: PgLedger[];
    ({ sql, ledgers } = await pgLedgers(2, { holdTimeoutMs: TIMEOUT, heartbeatMs: 200 }));
    [live, silent] = ledgers as [PgLedger, PgLedger];
    s = pgSubject(sql, ledgers);
    lines = [];
    restore = events.redirect((line) => lines.push(line));
  });
  afterAll(() => restore());

  it("are released by another instance once the timeout has passed, with one holds_released event; a live instance keeps its own; the silent one's post is refused", async () => {
    const a = await s.account(10);
    const own = await live.reserve("gw_live", a.accountId, a.keyId, 2 * USD);
    const orphan = await silent.reserve("gw_silent", a.accountId, a.keyId, 3 * USD);
    await silent.stop(); // its heartbeat stops, as when its process is killed
    await Bun.sleep(TIMEOUT * 1.5);
    await live.tick();
    expect(await live.balance(a.accountId)).toEqual({ balanceNano: 10 * USD, reservedNano: 2 * USD, spendableNano: 8 * USD });
    expect(await s.openHolds(a.accountId)).toBe(1);
    const event = lines.map((l) => JSON.parse(l)).find((e) => e.event === "holds_released");
    expect(event).toMatchObject({ instance: silent.instanceId, holds: 1, held_nano: 3 * USD });
    // The silent one's request, finishing after all, is refused (its instance fenced itself before
    // the release), charges nothing and releases nothing twice.
    expect(await refusal(() => orphan.post(USD))).toMatchObject({ status: 503, code: "database_unavailable" });
    await silent.settled();
    expect(await own.post(USD)).toEqual({ chargedNano: USD, shortfallNano: 0 });
    expect(await live.balance(a.accountId)).toEqual({ balanceNano: 9 * USD, reservedNano: 0, spendableNano: 9 * USD });
    expect(sum(await s.entries(a.accountId))).toBe(9 * USD);
  });

  it("are released within the timeout of their instance's last heartbeat, by another instance beating on its own period", async () => {
    const a = await s.account(10);
    const dying = await PgLedger.start(sql, { instanceId: "gw-dying", holdTimeoutMs: TIMEOUT, heartbeatMs: 200 });
    await dying.reserve("gw_dying", a.accountId, a.keyId, USD);
    await dying.stop(); // its last heartbeat was at its start, or on a tick since
    const diedAt = performance.now();
    while ((await s.openHolds(a.accountId)) > 0) {
      expect(performance.now() - diedAt).toBeLessThan(TIMEOUT + 150);
      await Bun.sleep(200);
      await live.tick();
    }
  });

  it("are never released while their instance heartbeats", async () => {
    const a = await s.account(10);
    await live.reserve("gw_live", a.accountId, a.keyId, USD);
    const other = await PgLedger.start(sql, { instanceId: "gw-watcher", holdTimeoutMs: TIMEOUT, heartbeatMs: 200 });
    started.push(other);
    await Bun.sleep(TIMEOUT * 2);
    await other.tick();
    expect((await live.balance(a.accountId)).reservedNano).toBe(USD);
    expect(await s.openHolds(a.accountId)).toBe(1);
  });

  it("are released on a later heartbeat when a void's release fails, with one ledger_write_failed event", async () => {
    const a = await s.account(10);
    const h = await live.reserve("gw_void", a.accountId, a.keyId, USD);
    await sql.unsafe(`CREATE FUNCTION refuse_delete() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused for the test'; END $$`);
    await sql.unsafe("CREATE TRIGGER refuse_delete BEFORE DELETE ON holds FOR EACH ROW EXECUTE FUNCTION refuse_delete()");
    h.void("failed");
    await live.settled();
    expect((await live.balance(a.accountId)).reservedNano).toBe(USD);
    expect(lines.map((l) => JSON.parse(l)).some((e) => e.event === "ledger_write_failed" && /refused for the test/.test(e.reason))).toBe(true);
    await sql.unsafe("DROP TRIGGER refuse_delete ON holds");
    await live.tick();
    await live.settled();
    expect((await live.balance(a.accountId)).reservedNano).toBe(0);
    expect(await s.openHolds(a.accountId)).toBe(0);
  });

  it("left by an earlier run under the same instance id are released when it starts again", async () => {
    const a = await s.account(10);
    // A short period: the start watches a row that beat moments ago for a period before it takes it for dead.
    const first = await PgLedger.start(sql, { instanceId: "gw-restarted", holdTimeoutMs: 30_000, heartbeatMs: 200 });
    await first.reserve("gw_before_crash", a.accountId, a.keyId, USD);
    await first.stop();
    const again = await PgLedger.start(sql, { instanceId: "gw-restarted", holdTimeoutMs: 30_000, heartbeatMs: 200 });
    started.push(again);
    expect((await again.balance(a.accountId)).reservedNano).toBe(0);
    expect(await s.openHolds(a.accountId)).toBe(0);
  });
});
