// The heartbeat as a lease on PostgreSQL (docs/database.md, "Heartbeats, fencing and the release of
// a silent instance's holds"): an observer counts another's silence only while its own beats
// succeed, an instance that cannot beat fences itself before anyone may release its holds, and one
// released by another writes its row again. Its own throwaway server: one test stops it.
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { SQL } from "bun";
import { migratePostgres } from "../../src/store/engine/postgres/client.ts";
import { PgLedger } from "../../src/store/ledger/postgres.ts";
import { events } from "../../src/core/events.ts";
import { startPostgres, type TestPostgres } from "../support/postgres.ts";

setDefaultTimeout(60_000);

const USD = 1_000_000_000;
/** hold_timeout_s of 1 s, beats every 200 ms: others release after 800 ms of silence, the instance fences itself after 700. */
const TIMEOUT = 1_000;
const BEAT = 200;

let pg: TestPostgres;
let url: string;
let sql: SQL;
const pools: SQL[] = [];
const started: PgLedger[] = [];
let lines: string[] = [];
let restore: () => void;

beforeAll(async () => {
  pg = await startPostgres();
  url = await pg.createDatabase("fence");
  await migratePostgres(url);
  sql = new SQL({ url, max: 4 });
  restore = events.redirect((line) => lines.push(line));
}, 60_000);

afterAll(async () => {
  restore?.();
  for (const l of started) await l.stop();
  for (const p of [...pools, sql]) await p?.close();
  await pg?.stop();
});

/** An instance on its own pool, as each gateway process has; `slow`: the default 30 s timeout, so no beat of its own comes between a test's steps. */
async function instance(id: string, slow = false): Promise<PgLedger> {
  const pool = new SQL({ url, max: 4 });
  pools.push(pool);
  const l = await PgLedger.start(pool, slow ? { instanceId: id, holdTimeoutMs: 30_000 } : { instanceId: id, holdTimeoutMs: TIMEOUT, heartbeatMs: BEAT });
  started.push(l);
  return l;
}

let seq = 0;
async function account(usd: number): Promise<{ accountId: number; keyId: number }> {
  const [a] = await sql`INSERT INTO accounts (email, balance_nano, created_at) VALUES (${`fence-${++seq}@test.local`}, ${usd * USD}, ${Date.now()}) RETURNING id`;
  const [k] = await sql`INSERT INTO api_keys (account_id, prefix, key_hash, created_at) VALUES (${a.id}, 'gw-test', ${`hash-${seq}`}, ${Date.now()}) RETURNING id`;
  return { accountId: Number(a.id), keyId: Number(k.id) };
}

async function books(accountId: number): Promise<{ balance: number; held: number; holds: number; charges: number }> {
  const [r] = await sql`SELECT a.balance_nano, a.held_nano, (SELECT count(*)::int FROM holds h WHERE h.account_id = a.id) AS holds,
      (SELECT count(*)::int FROM ledger_entries e WHERE e.account_id = a.id AND e.kind = 'charge') AS charges
    FROM accounts a WHERE a.id = ${accountId}`;
  return { balance: Number(r.balance_nano), held: Number(r.held_nano), holds: r.holds, charges: r.charges };
}

/** The instance's row was written within a beat (false while the database does not answer). */
async function beatenJustNow(id: string): Promise<boolean> {
  try {
    const [r] = await sql`SELECT heartbeat_at > (extract(epoch FROM clock_timestamp()) * 1000)::bigint - ${BEAT} AS fresh FROM instances WHERE id = ${id}`;
    return r?.fresh === true;
  } catch {
    return false;
  }
}

const rowOf = async (id: string) => (await sql`SELECT id FROM instances WHERE id = ${id}`).length === 1;
const eventsNamed = (name: string) => lines.map((l) => JSON.parse(l)).filter((e) => e.event === name);

/** What a rejected promise carried. */
async function refusal(p: () => unknown): Promise<{ status: number; code: string }> {
  try {
    await p();
  } catch (e) {
    return e as never;
  }
  throw new Error("not refused");
}

/** What another instance's release does to `id`: its holds off the sums, its holds and its row deleted. */
async function releaseAsAnotherWould(id: string): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`UPDATE accounts a SET held_nano = a.held_nano - h.n FROM (SELECT account_id, sum(amount_nano) AS n FROM holds WHERE instance_id = ${id} GROUP BY account_id) h WHERE a.id = h.account_id`;
    await tx`UPDATE api_keys k SET held_nano = k.held_nano - h.n FROM (SELECT key_id, sum(amount_nano) AS n FROM holds WHERE instance_id = ${id} GROUP BY key_id) h WHERE k.id = h.key_id`;
    await tx`DELETE FROM holds WHERE instance_id = ${id}`;
    await tx`DELETE FROM instances WHERE id = ${id}`;
  });
}

describe("two instances started at the same moment under one id", () => {
  it("exactly one starts; the other is refused naming the id, and the row is the first's", async () => {
    const outcomes = await Promise.allSettled([instance("gw-twin"), instance("gw-twin")]);
    const started = outcomes.filter((o) => o.status === "fulfilled");
    const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === "rejected");
    expect(started).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect(String(refused[0]!.reason)).toContain('instance_id "gw-twin" is in use by a running instance');
    // The winner keeps beating on the row; a loaded machine may delay one beat past BEAT, so a few are waited for.
    const until = Date.now() + 3_000;
    while (!(await beatenJustNow("gw-twin")) && Date.now() < until) await Bun.sleep(50);
    expect(await beatenJustNow("gw-twin")).toBe(true);
  });

  it("of two started at once on the row of a run that died, exactly one takes it", async () => {
    await sql`INSERT INTO instances (id, heartbeat_at) VALUES ('gw-heir', (extract(epoch FROM clock_timestamp()) * 1000)::bigint)`;
    const outcomes = await Promise.allSettled([instance("gw-heir"), instance("gw-heir")]);
    expect(outcomes.map((o) => o.status).sort()).toEqual(["fulfilled", "rejected"]);
  });
});

describe("a process whose id another process took (while it was silent)", () => {
  const takeOver = (id: string) => sql`UPDATE instances SET run_id = 'another-process' WHERE id = ${id}`;
  const runOf = async (id: string) => (await sql`SELECT run_id FROM instances WHERE id = ${id}`)[0]?.run_id ?? null;

  it("fails its beats instead of beating on the other's row", async () => {
    const l = await instance("gw-taken", true);
    await takeOver("gw-taken");
    expect(await l.tick()).toBe(false);
    expect(await runOf("gw-taken")).toBe("another-process");
  });

  it("leaves the other's row and holds at its clean stop", async () => {
    const l = await instance("gw-taken-stop", true);
    const a = await account(10);
    await l.reserve("gw_taken_stop", a.accountId, a.keyId, USD);
    await takeOver("gw-taken-stop");
    await l.stop();
    await l.retire();
    expect(await runOf("gw-taken-stop")).toBe("another-process");
    expect(await books(a.accountId)).toMatchObject({ held: USD, holds: 1 });
  });
});

describe("an instance released by another", () => {
  it("writes its row again and takes the hold, instead of failing the hold insert's foreign key", async () => {
    const l = await instance("gw-rereg", true);
    const a = await account(10);
    await releaseAsAnotherWould("gw-rereg");
    const h = await l.reserve("gw_rereg", a.accountId, a.keyId, USD);
    expect(await rowOf("gw-rereg")).toBe(true);
    expect(await h.post(USD)).toEqual({ chargedNano: USD, shortfallNano: 0 });
    expect(await books(a.accountId)).toEqual({ balance: 9 * USD, held: 0, holds: 0, charges: 1 });
  });

  it("never posts a hold it took before the release: refused 503 database_unavailable, nothing charged", async () => {
    const l = await instance("gw-released", true);
    const a = await account(10);
    const h = await l.reserve("gw_released", a.accountId, a.keyId, 3 * USD);
    await releaseAsAnotherWould("gw-released");
    await l.tick(); // the beat finds the row gone, and writes it again
    expect(await refusal(() => h.post(USD))).toMatchObject({ status: 503, code: "database_unavailable" });
    await l.settled();
    expect(await books(a.accountId)).toEqual({ balance: 10 * USD, held: 0, holds: 0, charges: 0 });
    // A new request on it is served as usual.
    const next = await l.reserve("gw_after", a.accountId, a.keyId, USD);
    expect(await next.post(USD)).toEqual({ chargedNano: USD, shortfallNano: 0 });
  });
});

describe("an instance whose heartbeat fails", () => {
  it("fences itself before another instance releases its holds, refusing reserves and posts with 503 database_unavailable", async () => {
    const observer = await instance("gw-observer-1");
    const l = await instance("gw-cut-off");
    const a = await account(10);
    const h = await l.reserve("gw_cut_off", a.accountId, a.keyId, 2 * USD);
    const fencedAt: number[] = [];
    l.onFence(() => fencedAt.push(performance.now()));
    lines = [];
    // Its beats (and only its) fail from now on, the database up for everyone else.
    await sql.unsafe(`CREATE FUNCTION refuse_beat() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'beat refused for the test'; END $$`);
    await sql.unsafe(`CREATE TRIGGER refuse_beat BEFORE INSERT OR UPDATE ON instances FOR EACH ROW WHEN (NEW.id = 'gw-cut-off') EXECUTE FUNCTION refuse_beat()`);
    try {
      const start = performance.now();
      while ((await books(a.accountId)).holds > 0) {
        if (performance.now() - start > 10 * TIMEOUT) throw new Error("the observer never released the silent instance's hold");
        await Bun.sleep(50);
      }
      expect(fencedAt).toHaveLength(1);
      const names = lines.map((line) => JSON.parse(line).event);
      expect(names.indexOf("instance_fenced")).toBeGreaterThanOrEqual(0);
      expect(names.indexOf("instance_fenced")).toBeLessThan(names.indexOf("holds_released"));
      expect(await refusal(() => l.reserve("gw_fenced", a.accountId, a.keyId, USD))).toMatchObject({ status: 503, code: "database_unavailable" });
      expect(await refusal(() => h.post(USD))).toMatchObject({ status: 503, code: "database_unavailable" });
    } finally {
      await sql.unsafe("DROP TRIGGER refuse_beat ON instances");
      await sql.unsafe("DROP FUNCTION refuse_beat");
    }
    // Its beats succeed again: it serves again, and nothing was charged meanwhile.
    expect(await l.tick()).toBe(true);
    await l.settled();
    const next = await l.reserve("gw_back", a.accountId, a.keyId, USD);
    expect(await next.post(USD)).toEqual({ chargedNano: USD, shortfallNano: 0 });
    expect(await books(a.accountId)).toEqual({ balance: 9 * USD, held: 0, holds: 0, charges: 1 });
    await observer.stop();
  });
});

describe("a database down for everyone", () => {
  it("makes nobody silent: an observer releases no one over time its own beats were failing, only once it has beaten for the threshold since", async () => {
    const observer = await instance("gw-observer-2");
    const quiet = await instance("gw-quiet");
    const a = await account(10);
    await quiet.reserve("gw_quiet", a.accountId, a.keyId, USD);
    // The quiet one beats no more (as when it is the last to reconnect), and the database goes down past the timeout.
    await quiet.stop();
    lines = [];
    pg.halt();
    await Bun.sleep(TIMEOUT * 2);
    pg.resume();
    const start = performance.now();
    while (!(await beatenJustNow("gw-observer-2"))) {
      if (performance.now() - start > 20_000) throw new Error("the observer never reconnected");
      await Bun.sleep(50);
      await observer.tick();
    }
    // The quiet one's last beat is over two timeouts old, but the observer has only just reconnected.
    await observer.tick();
    expect(await rowOf("gw-quiet")).toBe(true);
    expect(await books(a.accountId)).toMatchObject({ holds: 1, held: USD });
    expect(eventsNamed("holds_released")).toEqual([]);
    // After a whole threshold of its own good beats, it does release a truly silent instance.
    const since = performance.now();
    while (await rowOf("gw-quiet")) {
      if (performance.now() - since > 10 * TIMEOUT) throw new Error("the quiet instance was never released");
      await Bun.sleep(BEAT);
      await observer.tick();
    }
    expect(eventsNamed("holds_released")).toMatchObject([{ instance: "gw-quiet", holds: 1, held_nano: USD }]);
    expect(await books(a.accountId)).toMatchObject({ holds: 0, held: 0 });
  });
});

describe("an instance that stops cleanly", () => {
  it("takes its row out of instances, with the hold left under it, so the table lists only running instances", async () => {
    const a = await account(5);
    const l = await instance("gw-leaving", true);
    await l.reserve("gw_left_open", a.accountId, a.keyId, USD);
    expect((await sql`SELECT id FROM instances WHERE id = 'gw-leaving'`).length).toBe(1);
    // What a server's stop runs (store/open.ts): the heartbeat ends, then the row goes.
    await l.stop();
    await l.retire();
    expect((await sql`SELECT id FROM instances WHERE id = 'gw-leaving'`).length).toBe(0);
    expect(await books(a.accountId)).toMatchObject({ holds: 0, held: 0, balance: 5 * USD });
  });
});
