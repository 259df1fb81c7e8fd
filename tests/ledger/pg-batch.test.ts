// The reserves and voids of one event-loop turn go to PostgreSQL as one statement each
// (store/ledger/postgres-batch.ts). Each request must still get the verdict and the error a lone
// statement would give it: these are the batch's own edge cases; the contract (contract.test.ts)
// and the concurrency suites cover the rest.
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { SQL } from "bun";
import { migratePostgres } from "../../src/store/engine/postgres/client.ts";
import { PgLedger } from "../../src/store/ledger/postgres.ts";
import { PgRequestLog } from "../../src/store/request-log/postgres.ts";
import type { PgDb } from "../../src/store/engine/postgres/client.ts";
import type { Hold } from "../../src/ledger/hold.ts";
import { startPostgres, type TestPostgres } from "../support/postgres.ts";

setDefaultTimeout(60_000);

const USD = 1_000_000_000;

let pg: TestPostgres;
let sql: SQL;
let pool: SQL;
let ledger: PgLedger;
/** The statements the ledger's pool was given that insert holds. */
let holdInserts = 0;
let holdReleases = 0;
let chargeStatements = 0;
/** The texts of the statements that charged. */
const chargeTexts = new Set<string>();

/** The ledger's pool, counting the statements that take and release holds (heartbeats aside). */
function counting(target: SQL): SQL {
  return new Proxy(target, {
    get(t, p) {
      const v = Reflect.get(t, p);
      if (p === "unsafe") {
        return (text: string, params?: unknown[]) => {
          if (text.includes("INSERT INTO holds")) holdInserts++;
          if (text.includes("INSERT INTO ledger_entries")) (chargeStatements++, chargeTexts.add(text));
          if (/^WITH h AS \(DELETE FROM holds WHERE id/.test(text)) holdReleases++;
          return v.call(t, text, params);
        };
      }
      return typeof v === "function" ? v.bind(t) : v;
    },
    apply(t, self, args) {
      const [strings] = args as [TemplateStringsArray];
      if (strings.join("").startsWith("WITH h AS (DELETE FROM holds WHERE id")) holdReleases++;
      return Reflect.apply(t as never, self, args);
    },
  });
}

beforeAll(async () => {
  pg = await startPostgres();
  const url = await pg.createDatabase("batch");
  await migratePostgres(url);
  sql = new SQL({ url, max: 4 });
  pool = new SQL({ url, max: 10 });
  ledger = await PgLedger.start(counting(pool), { instanceId: "gw-batch", holdTimeoutMs: 30_000 });
}, 60_000);

afterAll(async () => {
  await ledger?.stop();
  await pool?.close();
  await sql?.close();
  await pg?.stop();
});

let seq = 0;
async function account(usd: number, quotaNano: number | null = null): Promise<{ accountId: number; keyId: number }> {
  const n = ++seq;
  const [a] = await sql`INSERT INTO accounts (email, balance_nano, created_at) VALUES (${`batch-${n}@test.local`}, ${usd * USD}, ${Date.now()}) RETURNING id`;
  const [k] = await sql`INSERT INTO api_keys (account_id, prefix, key_hash, quota_nano, created_at) VALUES (${a.id}, 'gw-test', ${`hash-${n}`}, ${quotaNano}, ${Date.now()}) RETURNING id`;
  return { accountId: Number(a.id), keyId: Number(k.id) };
}

async function held(accountId: number): Promise<{ account: number; keys: number; rows: number }> {
  const [r] = await sql`SELECT a.held_nano, (SELECT coalesce(sum(held_nano), 0)::bigint FROM api_keys WHERE account_id = a.id) AS keys,
      (SELECT count(*)::int FROM holds WHERE account_id = a.id) AS rows FROM accounts a WHERE a.id = ${accountId}`;
  return { account: Number(r.held_nano), keys: Number(r.keys), rows: r.rows };
}

/** Reserves issued in one turn; each a hold or what refused it. */
function oneTurn(items: { accountId: number; keyId: number; amountNano: number }[]): Promise<(Hold | { status: number; code: string; message: string })[]> {
  return Promise.all(items.map((x, i) => ledger.reserve(`gw_b${++seq}_${i}`, x.accountId, x.keyId, x.amountNano).catch((e) => e)));
}

const isHold = (r: unknown): r is Hold => typeof r === "object" && r !== null && "requestId" in r;

/** The account's row locked by another connection until `release`: a statement on it waits, however fast the machine. */
async function lockedAccountRow(accountId: number): Promise<{ release(): Promise<void> }> {
  const { promise: released, resolve: unlock } = Promise.withResolvers<void>();
  const { promise: taken, resolve: isLocked } = Promise.withResolvers<void>();
  const tx = sql.begin(async (t) => {
    await t`SELECT 1 FROM accounts WHERE id = ${accountId} FOR UPDATE`;
    isLocked();
    await released;
  });
  await taken;
  return {
    async release() {
      unlock();
      await tx;
    },
  };
}

describe("reserves of one turn", () => {
  it("go to PostgreSQL as one statement", async () => {
    const accounts = await Promise.all(Array.from({ length: 20 }, () => account(10)));
    const before = holdInserts;
    const results = await oneTurn(accounts.map((a) => ({ ...a, amountNano: USD })));
    expect(results.every(isHold)).toBe(true);
    expect(holdInserts - before).toBe(1);
    for (const a of accounts) expect(await held(a.accountId)).toEqual({ account: USD, keys: USD, rows: 1 });
  });

  it("that arrive while a reserve's statement is under way go together in one statement once it answers", async () => {
    const a = await account(10);
    const before = holdInserts;
    // The account's row locked elsewhere keeps the first reserve's statement waiting, however fast the machine.
    const lock = await lockedAccountRow(a.accountId);
    const first = ledger.reserve(`gw_w${++seq}`, a.accountId, a.keyId, USD);
    await Bun.sleep(50);
    const second = ledger.reserve(`gw_w${++seq}`, a.accountId, a.keyId, USD);
    await Bun.sleep(50);
    const third = ledger.reserve(`gw_w${++seq}`, a.accountId, a.keyId, USD);
    await Bun.sleep(50);
    await lock.release();
    expect((await Promise.all([first, second, third])).every(isHold)).toBe(true);
    expect(holdInserts - before).toBe(2);
    expect(await held(a.accountId)).toEqual({ account: 3 * USD, keys: 3 * USD, rows: 3 });
  });

  it("grant the first of two on one account that together cross its balance and refuse the second 402, as alone", async () => {
    const a = await account(1.5);
    const [first, second] = await oneTurn([{ ...a, amountNano: USD }, { ...a, amountNano: USD }]);
    expect(isHold(first)).toBe(true);
    expect(second).toMatchObject({ status: 402, code: "insufficient_balance" });
    expect((second as { message: string }).message).toContain("0.5 USD is spendable");
    expect(await held(a.accountId)).toEqual({ account: USD, keys: USD, rows: 1 });
  });

  it("still grant a small reserve that fits after a large one on the same account was refused", async () => {
    const a = await account(1);
    const [large, small] = await oneTurn([{ ...a, amountNano: 2 * USD }, { ...a, amountNano: USD }]);
    expect(large).toMatchObject({ status: 402, code: "insufficient_balance" });
    expect(isHold(small)).toBe(true);
    expect(await held(a.accountId)).toEqual({ account: USD, keys: USD, rows: 1 });
  });

  it("refuse the second of two on one key that together cross its quota with 429 quota, as alone", async () => {
    const a = await account(10, Math.round(1.5 * USD));
    const [first, second] = await oneTurn([{ ...a, amountNano: USD }, { ...a, amountNano: USD }]);
    expect(isHold(first)).toBe(true);
    expect(second).toMatchObject({ status: 429, code: "quota" });
    expect(await held(a.accountId)).toEqual({ account: USD, keys: USD, rows: 1 });
  });

  it("refuse only the one whose key is gone, and decide a disabled account's as a lone reserve would", async () => {
    const [ok, gone, disabled] = await Promise.all([account(5), account(5), account(5)]);
    await sql`DELETE FROM api_keys WHERE id = ${gone.keyId}`;
    await sql`UPDATE accounts SET disabled_at = ${Date.now()} WHERE id = ${disabled.accountId}`;
    const [r1, r2, r3] = await oneTurn([{ ...ok, amountNano: USD }, { ...gone, amountNano: USD }, { ...disabled, amountNano: USD }]);
    expect(isHold(r1)).toBe(true);
    expect(r2).toMatchObject({ status: 401 });
    // The ledger leaves a disabled account to authentication, which refuses its keys before any reserve.
    expect(isHold(r3)).toBe(true);
    expect(await held(ok.accountId)).toEqual({ account: USD, keys: USD, rows: 1 });
    expect(await held(gone.accountId)).toEqual({ account: 0, keys: 0, rows: 0 });
  });

  it("are each decided alone when the batch statement fails, none failed by it", async () => {
    await sql.unsafe(`CREATE FUNCTION one_hold_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF (SELECT count(*) FROM n) > 1 THEN RAISE EXCEPTION 'several holds refused for the test'; END IF; RETURN NULL; END $$`);
    await sql.unsafe("CREATE TRIGGER one_hold_only AFTER INSERT ON holds REFERENCING NEW TABLE AS n FOR EACH STATEMENT EXECUTE FUNCTION one_hold_only()");
    try {
      const a = await account(3);
      const before = holdInserts;
      const results = await oneTurn(Array.from({ length: 5 }, () => ({ ...a, amountNano: USD })));
      expect(results.filter(isHold)).toHaveLength(3);
      expect(results.filter((r) => !isHold(r))).toEqual(Array(2).fill(expect.objectContaining({ status: 402 })));
      expect(holdInserts - before).toBe(1 + 5);
      expect(await held(a.accountId)).toEqual({ account: 3 * USD, keys: 3 * USD, rows: 3 });
    } finally {
      await sql.unsafe("DROP TRIGGER one_hold_only ON holds; DROP FUNCTION one_hold_only()");
    }
  });

  it("each fail with the error a lone reserve gets when the database refuses every hold", async () => {
    await sql.unsafe(`CREATE FUNCTION no_holds() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'holds refused for the test'; END $$`);
    await sql.unsafe("CREATE TRIGGER no_holds BEFORE INSERT ON holds FOR EACH ROW EXECUTE FUNCTION no_holds()");
    try {
      const a = await account(10);
      const lone = await ledger.reserve("gw_lone", a.accountId, a.keyId, USD).catch((e: Error) => e);
      const results = await oneTurn(Array.from({ length: 4 }, () => ({ ...a, amountNano: USD })));
      expect(lone).toBeInstanceOf(Error);
      for (const r of results) expect((r as unknown as Error).message).toBe((lone as Error).message);
      expect(await held(a.accountId)).toEqual({ account: 0, keys: 0, rows: 0 });
    } finally {
      await sql.unsafe("DROP TRIGGER no_holds ON holds; DROP FUNCTION no_holds()");
    }
  });
});

describe("the money statements of one instance", () => {
  it("wait for each other: a reserve is sent only once the post under way has answered", async () => {
    const a = await account(10);
    const [h] = (await oneTurn([{ ...a, amountNano: USD }])).filter(isHold);
    // The account's row locked elsewhere keeps the post's statement waiting, however fast the machine.
    const lock = await lockedAccountRow(a.accountId);
    const posted = h!.post(USD / 2);
    await Bun.sleep(50);
    const before = holdInserts;
    const reserved = ledger.reserve(`gw_l${++seq}`, a.accountId, a.keyId, USD);
    await Bun.sleep(100);
    const sentWhilePostWaited = holdInserts - before;
    await lock.release();
    expect(await posted).toEqual({ chargedNano: USD / 2, shortfallNano: 0 });
    expect(isHold(await reserved)).toBe(true);
    expect(sentWhilePostWaited).toBe(0);
    expect(holdInserts - before).toBe(1);
    expect(await held(a.accountId)).toEqual({ account: USD, keys: USD, rows: 1 });
  });
});

describe("voids of one turn", () => {
  it("release their holds in one statement, every sum back to zero", async () => {
    const a = await account(10);
    const holds = (await oneTurn(Array.from({ length: 6 }, () => ({ ...a, amountNano: USD })))).filter(isHold);
    const before = holdReleases;
    for (const h of holds) h.void("failed");
    await ledger.settled();
    expect(holdReleases - before).toBe(1);
    expect(await held(a.accountId)).toEqual({ account: 0, keys: 0, rows: 0 });
  });
});

async function entries(accountId: number): Promise<{ amount: number; shortfall: number }[]> {
  const rows = await sql`SELECT amount_nano, shortfall_nano FROM ledger_entries WHERE account_id = ${accountId} AND kind = 'charge' ORDER BY id`;
  return rows.map((r: Record<string, string>) => ({ amount: Number(r.amount_nano), shortfall: Number(r.shortfall_nano) }));
}

describe("posts of one turn", () => {
  it("charge every whole cost in one statement, holds released, the books exact", async () => {
    const a = await account(10);
    const holds = (await oneTurn(Array.from({ length: 5 }, () => ({ ...a, amountNano: USD })))).filter(isHold);
    const before = chargeStatements;
    const settlements = await Promise.all(holds.map((h) => h.post(USD / 2)));
    expect(chargeStatements - before).toBe(1);
    expect(settlements).toEqual(Array(5).fill({ chargedNano: USD / 2, shortfallNano: 0 }));
    expect(await entries(a.accountId)).toEqual(Array(5).fill({ amount: -USD / 2, shortfall: 0 }));
    expect(await held(a.accountId)).toEqual({ account: 0, keys: 0, rows: 0 });
    expect((await ledger.balance(a.accountId)).balanceNano).toBe(10 * USD - 5 * (USD / 2));
  });

  it("with their log rows go as one statement text whatever their count, every row written", async () => {
    const a = await account(10);
    const log = new PgRequestLog({ $client: sql } as unknown as PgDb);
    const withRow = (h: Hold) => Object.assign(() => {}, { rider: () => log.rider({ requestId: h.requestId, accountId: h.accountId, keyId: h.keyId, method: "POST", path: "/v1/chat/completions", status: 200, latencyMs: 3, costNano: USD / 10 }) });
    chargeTexts.clear();
    const ids: string[] = [];
    for (const n of [2, 3, 5]) {
      const holds = (await oneTurn(Array.from({ length: n }, () => ({ ...a, amountNano: USD })))).filter(isHold);
      ids.push(...holds.map((h) => h.requestId));
      expect(await Promise.all(holds.map((h) => h.post(USD / 10, withRow(h))))).toEqual(Array(n).fill({ chargedNano: USD / 10, shortfallNano: 0 }));
    }
    expect(chargeTexts.size).toBe(1);
    expect(await sql`SELECT count(*)::int AS n FROM request_logs WHERE request_id IN ${sql(ids)}`).toEqual([{ n: 10 }]);
    expect(await held(a.accountId)).toEqual({ account: 0, keys: 0, rows: 0 });
  });

  it("cap the second of two charges on one account that together cross its balance, with its shortfall, as one by one", async () => {
    const a = await account(3);
    const [h1, h2] = (await oneTurn([{ ...a, amountNano: USD }, { ...a, amountNano: USD }])).filter(isHold);
    // Two posts at once have no order between them: whichever goes second is capped.
    const settlements = await Promise.all([h1!.post(2 * USD), h2!.post(2 * USD)]);
    const byCharge = (x: { chargedNano: number }, y: { chargedNano: number }) => x.chargedNano - y.chargedNano;
    expect(settlements.sort(byCharge)).toEqual([{ chargedNano: USD, shortfallNano: USD }, { chargedNano: 2 * USD, shortfallNano: 0 }]);
    expect((await entries(a.accountId)).sort((x, y) => x.amount - y.amount)).toEqual([{ amount: -2 * USD, shortfall: 0 }, { amount: -USD, shortfall: USD }]);
    expect((await ledger.balance(a.accountId)).balanceNano).toBe(0);
    expect(await held(a.accountId)).toEqual({ account: 0, keys: 0, rows: 0 });
  });

  it("are each made alone when the batch statement fails, none failed by it", async () => {
    await sql.unsafe(`CREATE FUNCTION one_charge_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF (SELECT count(*) FROM n) > 1 THEN RAISE EXCEPTION 'several charges refused for the test'; END IF; RETURN NULL; END $$`);
    await sql.unsafe("CREATE TRIGGER one_charge_only AFTER INSERT ON ledger_entries REFERENCING NEW TABLE AS n FOR EACH STATEMENT EXECUTE FUNCTION one_charge_only()");
    try {
      const a = await account(10);
      const holds = (await oneTurn(Array.from({ length: 4 }, () => ({ ...a, amountNano: USD })))).filter(isHold);
      const before = chargeStatements;
      const settlements = await Promise.all(holds.map((h) => h.post(USD)));
      expect(chargeStatements - before).toBe(1 + 4);
      expect(settlements).toEqual(Array(4).fill({ chargedNano: USD, shortfallNano: 0 }));
      expect((await ledger.balance(a.accountId)).balanceNano).toBe(6 * USD);
      expect(await held(a.accountId)).toEqual({ account: 0, keys: 0, rows: 0 });
    } finally {
      await sql.unsafe("DROP TRIGGER one_charge_only ON ledger_entries; DROP FUNCTION one_charge_only()");
    }
  });

  it("with their log rows tell the access log and metrics only of the rows whose charge committed", async () => {
    const told: string[] = [];
    const log = new PgRequestLog({ $client: sql } as unknown as PgDb, { onRow: (r) => told.push(r.requestId) });
    const withRow = (h: Hold) => Object.assign(() => {}, { rider: () => log.rider({ requestId: h.requestId, accountId: h.accountId, keyId: h.keyId, method: "POST", path: "/v1/chat/completions", status: 200, latencyMs: 3, costNano: USD / 10 }) });
    const a = await account(10);
    const holds = (await oneTurn(Array.from({ length: 3 }, () => ({ ...a, amountNano: USD })))).filter(isHold);
    const refused = holds[1]!.requestId;
    await sql.unsafe(`CREATE FUNCTION refuse_one() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.request_id = '${refused}' THEN RAISE EXCEPTION 'charge refused for the test'; END IF; RETURN NEW; END $$`);
    await sql.unsafe("CREATE TRIGGER refuse_one BEFORE INSERT ON ledger_entries FOR EACH ROW EXECUTE FUNCTION refuse_one()");
    try {
      const results = await Promise.allSettled(holds.map((h) => h.post(USD / 10, withRow(h))));
      expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
      expect(told.sort()).toEqual([holds[0]!.requestId, holds[2]!.requestId].sort());
    } finally {
      await sql.unsafe("DROP TRIGGER refuse_one ON ledger_entries; DROP FUNCTION refuse_one()");
    }
  });

  it("with a log row written in the charge's own transaction (no rider) tell it once that transaction committed", async () => {
    const told: string[] = [];
    const log = new PgRequestLog({ $client: sql } as unknown as PgDb, { onRow: (r) => told.push(r.requestId) });
    const a = await account(10);
    const [h] = (await oneTurn([{ ...a, amountNano: USD }])).filter(isHold);
    const row = { requestId: h!.requestId, accountId: a.accountId, keyId: a.keyId, method: "POST", path: "/v1/chat/completions", status: 200, latencyMs: 3, costNano: USD / 10 };
    let toldInTransaction: string[] | null = null;
    await h!.post(USD / 10, async (tx) => {
      const tell = await log.write(row, tx);
      toldInTransaction = [...told];
      return tell;
    });
    expect(toldInTransaction!).toEqual([]);
    expect(told).toEqual([h!.requestId]);
  });
});
