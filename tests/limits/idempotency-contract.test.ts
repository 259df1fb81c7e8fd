import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { IDEMPOTENCY_TTL_MS, scopedIdempotencyKey, type IdempotencyStore } from "../../src/store/idempotency/contract.ts";
import { Idempotency } from "../../src/store/idempotency/sqlite.ts";
import { PgIdempotency } from "../../src/store/idempotency/postgres.ts";
import { ENGINES, stopEngines, POSTGRES, run, type Opened } from "../support/engines.ts";

// This file's databases and PostgreSQL server (support/engines.ts).
afterAll(stopEngines);

// One idempotency store, two implementations: every behaviour below holds on SQLite and on
// PostgreSQL (never skipped: CI installs postgresql). SQLite's answers are the reference.

setDefaultTimeout(30_000);

const WAIT_MS = 200;
const OK = { status: 200, contentType: "application/json", body: '{"id":"x"}' };

/** A live instance's store (its heartbeat row on PostgreSQL, as PgLedger.start writes it). */
async function storeOn(o: Opened, instance = "gw-a"): Promise<IdempotencyStore> {
  if (o.kind === "sqlite") return new Idempotency(o.db, { waitForFirstMs: WAIT_MS });
  await run(o, "INSERT INTO instances (id, heartbeat_at) VALUES ($1, 0) ON CONFLICT DO NOTHING", instance);
  return new PgIdempotency(o.db, instance, { waitForFirstMs: WAIT_MS });
}

/** What a refused begin carried. */
async function refusal(p: () => Promise<unknown>): Promise<{ status: number; code: string; message: string; headers?: Record<string, string> }> {
  try {
    await p();
  } catch (e) {
    return e as never;
  }
  throw new Error("not refused");
}

let keys = 0;
const idem = () => scopedIdempotencyKey("/v1/messages", `k-${++keys}`)!;

for (const engine of ENGINES) {
  describe(`idempotency on ${engine.name}`, () => {
    let o: Opened;
    let s: IdempotencyStore;
    beforeAll(async () => {
      o = await engine.open();
      s = await storeOn(o);
    });

    it("claims a new key for the request", async () => {
      expect(await s.begin(1, idem(), "sha", "gw_1")).toEqual({ kind: "fresh" });
    });

    it("replays a successful answer to the same key and body", async () => {
      const k = idem();
      await s.begin(1, k, "sha", "gw_1");
      await s.finish(1, k, OK);
      expect(await s.begin(1, k, "sha", "gw_2")).toEqual({ kind: "replay", answer: OK });
    });

    it("frees the key of a failed request, so that a retry runs again", async () => {
      for (const answer of [null, { ...OK, status: 500 }, { ...OK, status: 429 }]) {
        const k = idem();
        await s.begin(1, k, "sha", "gw_1");
        await s.finish(1, k, answer);
        expect(await s.begin(1, k, "sha", "gw_2")).toEqual({ kind: "fresh" });
      }
    });

    it("keeps a failure marked kept (an ambiguous image result) for replay, so that a retry does not run again", async () => {
      const k = idem();
      const kept = { status: 502, contentType: "application/json", body: '{"error":{"code":"ambiguous_upstream_result"}}', kept: true };
      await s.begin(1, k, "sha", "gw_1");
      await s.finish(1, k, kept);
      expect(await s.begin(1, k, "sha", "gw_2")).toEqual({ kind: "replay", answer: { status: 502, contentType: kept.contentType, body: kept.body } });
    });

    it("refuses the key with another body with 409 idempotency_conflict and x-should-retry: false, in flight or done", async () => {
      const k = idem();
      await s.begin(1, k, "sha", "gw_1");
      const inFlight = await refusal(() => s.begin(1, k, "other", "gw_2"));
      await s.finish(1, k, OK);
      const done = await refusal(() => s.begin(1, k, "other", "gw_3"));
      for (const e of [inFlight, done]) {
        expect([e.status, e.code, e.headers?.["x-should-retry"]]).toEqual([409, "idempotency_conflict", "false"]);
        expect(e.message).toBe("This Idempotency-Key was already used with a different request body. Use a new key for a new request.");
      }
    });

    it("answers a duplicate with 409 while the first is still in flight after the wait", async () => {
      const k = idem();
      await s.begin(1, k, "sha", "gw_1");
      const e = await refusal(() => s.begin(1, k, "sha", "gw_2"));
      expect([e.status, e.code, e.message]).toEqual([409, "idempotency_conflict", "A request with this Idempotency-Key is still in progress. Retry later."]);
    });

    it("gives a duplicate that waits the first's answer once it finishes", async () => {
      const k = idem();
      await s.begin(1, k, "sha", "gw_1");
      const waiting = s.begin(1, k, "sha", "gw_2");
      await Bun.sleep(50);
      await s.finish(1, k, OK);
      expect(await waiting).toEqual({ kind: "replay", answer: OK });
    });

    it("keeps each API key's Idempotency-Keys apart", async () => {
      const k = idem();
      await s.begin(1, k, "sha", "gw_1");
      expect(await s.begin(2, k, "other", "gw_2")).toEqual({ kind: "fresh" });
    });

    it("refuses an Idempotency-Key over 255 characters with 400 invalid_request", async () => {
      const e = await refusal(() => s.begin(1, scopedIdempotencyKey("/v1/messages", "x".repeat(256))!, "sha", "gw_1"));
      expect([e.status, e.code]).toEqual([400, "invalid_request"]);
      expect(await s.begin(1, scopedIdempotencyKey("/v1/messages", "x".repeat(255))!, "sha", "gw_1")).toEqual({ kind: "fresh" });
    });

    it("claims anew a key whose record is over a day old, whatever its body", async () => {
      const k = idem();
      await run(o, "INSERT INTO idempotency_records (key_id, idempotency_key, body_sha256, state, status, content_type, response_body, request_id, created_at) VALUES ($1, $2, 'old', 'done', 200, 'a', 'b', 'gw_0', $3)", 1, k, Date.now() - IDEMPOTENCY_TTL_MS - 1_000);
      expect(await s.begin(1, k, "sha", "gw_1")).toEqual({ kind: "fresh" });
    });

    it("prunes the records over a day old and says how many", async () => {
      const fresh = await engine.open();
      const p = await storeOn(fresh);
      const now = Date.now();
      await p.begin(1, idem(), "sha", "gw_1");
      await p.begin(1, idem(), "sha", "gw_2");
      expect(await p.prune(now + IDEMPOTENCY_TTL_MS + 60_000)).toBe(2);
      expect(await p.prune(now + IDEMPOTENCY_TTL_MS + 60_000)).toBe(0);
    });

    it("abandons its in-flight claims at start, keeping the answers done", async () => {
      const fresh = await engine.open();
      const p = await storeOn(fresh);
      const [a, b] = [idem(), idem()];
      await p.begin(1, a, "sha", "gw_1");
      await p.begin(1, b, "sha", "gw_2");
      await p.finish(1, b, OK);
      expect(await p.abandonInFlight()).toBe(1);
      expect(await p.begin(1, a, "sha", "gw_3")).toEqual({ kind: "fresh" });
      expect(await p.begin(1, b, "sha", "gw_4")).toEqual({ kind: "replay", answer: OK });
    });
  });
}

describe("idempotency on PostgreSQL, across instances", () => {
  let o: Opened;
  let a: PgIdempotency;
  let b: PgIdempotency;
  beforeAll(async () => {
    o = await POSTGRES.open();
    [a, b] = [(await storeOn(o, "gw-a")) as PgIdempotency, (await storeOn(o, "gw-b")) as PgIdempotency];
  });

  it("runs a duplicate sent to two instances at once only once, the others replaying its answer", async () => {
    const k = idem();
    const begun = await Promise.all(Array.from({ length: 20 }, (_, i) => [a, b][i % 2]!.begin(1, k, "sha", `gw_${i}`).then((r) => r, () => "refused")));
    expect(begun.filter((r) => typeof r === "object" && r.kind === "fresh")).toHaveLength(1);
    const holder = (await run(o, "SELECT instance_id FROM idempotency_records WHERE idempotency_key = $1", k))[0]!.instance_id === "gw-a" ? a : b;
    const waiting = Promise.all(Array.from({ length: 6 }, (_, i) => [a, b][i % 2]!.begin(1, k, "sha", `gw_w${i}`)));
    await Bun.sleep(50);
    await holder.finish(1, k, OK);
    for (const r of await waiting) expect(r).toEqual({ kind: "replay", answer: OK });
  });

  it("answers a duplicate at another instance as SQLite does while the first is in flight", async () => {
    const k = idem();
    await a.begin(1, k, "sha", "gw_1");
    const e = await refusal(() => b.begin(1, k, "sha", "gw_2"));
    expect([e.status, e.code, e.message]).toEqual([409, "idempotency_conflict", "A request with this Idempotency-Key is still in progress. Retry later."]);
  });

  it("abandons at start only its own instance's claims", async () => {
    const [c, d] = [(await storeOn(o, "gw-c")) as PgIdempotency, (await storeOn(o, "gw-d")) as PgIdempotency];
    const [mine, theirs] = [idem(), idem()];
    await c.begin(1, mine, "sha", "gw_1");
    await d.begin(1, theirs, "sha", "gw_2");
    expect(await c.abandonInFlight()).toBe(1);
    expect(await c.begin(1, mine, "sha", "gw_3")).toEqual({ kind: "fresh" });
    expect((await refusal(() => c.begin(1, theirs, "sha", "gw_4"))).code).toBe("idempotency_conflict");
  });

  it("releases a gone instance's claim to the duplicate that waits on it, once the ledger has dropped the instance", async () => {
    const silent = (await storeOn(o, "gw-silent")) as PgIdempotency;
    const k = idem();
    await silent.begin(1, k, "sha", "gw_1");
    const waiting = a.begin(1, k, "sha", "gw_2");
    await Bun.sleep(50);
    await run(o, "DELETE FROM instances WHERE id = 'gw-silent'");
    expect(await waiting).toEqual({ kind: "fresh" });
    // The silent instance's late finish leaves the new holder's claim alone.
    await silent.finish(1, k, { ...OK, body: "late" });
    await a.finish(1, k, OK);
    expect(await b.begin(1, k, "sha", "gw_3")).toEqual({ kind: "replay", answer: OK });
  });

  it("sweeps the in-flight claims of gone instances and of none (copied from SQLite), and says how many", async () => {
    const gone = (await storeOn(o, "gw-gone")) as PgIdempotency;
    const [k1, k2, live] = [idem(), idem(), idem()];
    await gone.begin(1, k1, "sha", "gw_1");
    await run(o, "INSERT INTO idempotency_records (key_id, idempotency_key, body_sha256, state, request_id, created_at) VALUES (1, $1, 'sha', 'in_flight', 'gw_2', $2)", k2, Date.now());
    await a.begin(1, live, "sha", "gw_3");
    await run(o, "DELETE FROM instances WHERE id = 'gw-gone'");
    expect(await a.releaseOrphans()).toBe(2);
    expect((await refusal(() => b.begin(1, live, "sha", "gw_4"))).code).toBe("idempotency_conflict");
  });

  it("rejects a begin the database cannot answer", async () => {
    const broken = new PgIdempotency({ $client: { unsafe: () => Promise.reject(new Error("connection refused")) } } as never, "gw-x");
    await expect(async () => broken.begin(1, idem(), "sha", "gw_1")).toThrow("connection refused");
  });

  it("keeps its claims from another instance's start", async () => {
    const k = idem();
    await a.begin(1, k, "sha", "gw_1");
    await b.abandonInFlight();
    expect((await refusal(() => b.begin(1, k, "sha", "gw_2"))).code).toBe("idempotency_conflict");
  });
});
