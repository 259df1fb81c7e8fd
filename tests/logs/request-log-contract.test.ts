import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import type { SQL } from "bun";
import { requestIdPrefixAt } from "../../src/core/request-id.ts";
import { events } from "../../src/core/events.ts";
import { PgRequestLog } from "../../src/store/request-log/postgres.ts";
import { RequestLog } from "../../src/store/request-log/sqlite.ts";
import type { LogRow, RequestLogStore } from "../../src/store/request-log/contract.ts";
import { ENGINES, stopEngines, pgOf, POSTGRES, run, type Opened } from "../support/engines.ts";

// This file's databases and PostgreSQL server (support/engines.ts).
afterAll(stopEngines);

// One request log, two implementations: every behaviour below holds on SQLite and on PostgreSQL
// (never skipped: CI installs postgresql). SQLite's answers are the reference.

setDefaultTimeout(30_000);

const DAY = 24 * 3600 * 1000;
let ids = 0;
const row = (over: Partial<LogRow> = {}): LogRow => ({ requestId: `${requestIdPrefixAt(Date.now())}t${String(++ids).padStart(8, "0")}`, method: "POST", path: "/v1/messages", status: 200, latencyMs: 12.4, ...over });

const logOn = (o: Opened, opts: { retentionDays?: number; onRow?: (r: LogRow) => void } = {}): RequestLogStore =>
  o.kind === "sqlite" ? new RequestLog(o.db, opts) : new PgRequestLog(o.db, opts);

/** The stored row, numbers as numbers and the stream flag as a boolean on both engines. */
async function stored(o: Opened, requestId: string): Promise<Record<string, unknown> | null> {
  const [r] = await run(o, "SELECT * FROM request_logs WHERE request_id = $1", requestId);
  if (!r) return null;
  return Object.fromEntries(Object.entries(r).map(([k, v]) => [k, k === "stream" ? Boolean(v) : typeof v === "string" && /^-?\d+$/.test(v) && k !== "request_id" ? Number(v) : v]));
}

let lines: string[] = [];
let restore: () => void;
beforeAll(() => {
  restore = events.redirect((line) => lines.push(line));
});
afterAll(() => restore());

for (const engine of ENGINES) {
  describe(`the request log on ${engine.name}`, () => {
    let o: Opened;
    let log: RequestLogStore;
    const told: LogRow[] = [];
    beforeAll(async () => {
      o = await engine.open();
      log = logOn(o, { onRow: (r) => told.push(r) });
    });

    it("stores a row with every column, the latency rounded and the time of writing", async () => {
      const before = Date.now();
      const r = row({ accountId: 3, keyId: 4, endpoint: "messages", model: "m", provider: "p", upstreamModel: "u", stream: true, errorCode: null, inputTokens: 10, outputTokens: 1e12, cacheReadTokens: 2, cacheWriteTokens: 1, images: 0, costNano: 5_000, attempts: 2 });
      await log.write(r);
      await log.flush();
      const s = (await stored(o, r.requestId))!;
      expect(s).toMatchObject({ request_id: r.requestId, account_id: 3, key_id: 4, method: "POST", path: "/v1/messages", endpoint: "messages", model: "m", provider: "p", upstream_model: "u", stream: true, status: 200, error_code: null, input_tokens: 10, output_tokens: 1e12, cache_read_tokens: 2, cache_write_tokens: 1, images: 0, cost_nano: 5_000, latency_ms: 12, attempts: 2 });
      expect(s.created_at as number).toBeGreaterThanOrEqual(before);
    });

    it("stores the fields left out as nulls, no stream, no cost and no attempts", async () => {
      const r = row();
      await log.write(r);
      await log.flush();
      expect(await stored(o, r.requestId)).toMatchObject({ account_id: null, key_id: null, model: null, stream: false, cost_nano: 0, attempts: 0, input_tokens: null });
    });

    it("keeps a request's later row in place of its earlier one", async () => {
      const r = row({ status: 200 });
      await log.write(r);
      await log.flush();
      await log.write({ ...r, status: 502, errorCode: "upstream_failed" });
      await log.flush();
      expect(await stored(o, r.requestId)).toMatchObject({ status: 502, error_code: "upstream_failed" });
      expect(await run(o, "SELECT request_id FROM request_logs WHERE request_id = $1", r.requestId)).toHaveLength(1);
    });

    it("tells onRow of every row written", async () => {
      const r = row();
      await log.write(r);
      expect(told.at(-1)).toBe(r);
    });

    it("never throws for a row the table refuses: an operator event names it, onRow is still told, the rows beside it are kept", async () => {
      lines = [];
      const [bad, good] = [row({ status: null as never }), row()];
      await log.write(bad);
      await log.write(good);
      await log.flush();
      expect(told.at(-2)).toBe(bad);
      expect(await stored(o, bad.requestId)).toBeNull();
      expect(await stored(o, good.requestId)).not.toBeNull();
      expect(lines.map((l) => JSON.parse(l)).filter((e) => e.event === "request_log_write_failed").map((e) => e.request_id)).toEqual([bad.requestId]);
    });

    it("prunes the rows older than its retention and says how many", async () => {
      const fresh = await engine.open();
      const p = logOn(fresh, { retentionDays: 10 });
      const now = Date.now();
      for (const [at, n] of [[now - 11 * DAY, 1], [now - 12 * DAY, 2], [now - 9 * DAY, 3]] as const) {
        await run(fresh, "INSERT INTO request_logs (request_id, method, path, status, latency_ms, created_at) VALUES ($1, 'POST', '/v1/messages', 200, 1, $2)", `${requestIdPrefixAt(at)}old${n}`, at);
      }
      expect(p.retentionDays).toBe(10);
      expect(await p.prune(now)).toBe(2);
      expect(await p.prune(now)).toBe(0);
      expect(await run(fresh, "SELECT request_id FROM request_logs")).toHaveLength(1);
    });
  });
}

describe("the request log on PostgreSQL, batched", () => {
  let o: Opened;
  let sql: SQL;
  let statements = 0;
  /** The database's client, counting the statements sent. */
  const counted = () => ({ $client: { unsafe: (text: string, params: never[]) => (statements++, sql.unsafe(text, params)) } }) as never;
  beforeAll(async () => {
    o = await POSTGRES.open();
    sql = pgOf(o).$client;
  });

  it("sends the rows written in one turn in one INSERT", async () => {
    const log = new PgRequestLog(counted());
    statements = 0;
    const rows = Array.from({ length: 50 }, () => row());
    for (const r of rows) log.write(r);
    await log.flush();
    expect(statements).toBe(1);
    expect(await run(o, "SELECT count(*)::int AS n FROM request_logs WHERE request_id = ANY($1)", rows.map((r) => r.requestId))).toEqual([{ n: 50 }]);
  });

  it("sends the rows of a turn in one statement text whatever their count, so PostgreSQL parses and plans it once", async () => {
    const texts = new Set<string>();
    const log = new PgRequestLog({ $client: { unsafe: (text: string, params: never[]) => (texts.add(text), sql.unsafe(text, params)) } } as never);
    for (const n of [2, 3, 7]) {
      for (let i = 0; i < n; i++) log.write(row());
      await log.flush();
    }
    expect(texts.size).toBe(1);
  });

  it("keeps every character of the rows written in one turn: quotes, backslashes, braces, commas, non-ASCII", async () => {
    const log = new PgRequestLog(pgOf(o));
    const odd = [`/v1/"quoted"\\path`, "{a,b}", "modèle ☃ 🚀", "line\nbreak\ttab", "'single'"];
    const rows = odd.map((text) => row({ path: text, model: text, errorCode: text, clientIp: text }));
    for (const r of rows) log.write(r);
    await log.flush();
    for (const [i, r] of rows.entries()) {
      expect(await stored(o, r.requestId)).toMatchObject({ path: odd[i], model: odd[i], error_code: odd[i], client_ip: odd[i] });
    }
  });

  it("stores every column of a row written in a turn of several as it stores the same row alone", async () => {
    const log = new PgRequestLog(pgOf(o));
    const full = (requestId?: string): LogRow => ({
      ...row(requestId ? { requestId } : {}),
      accountId: 7, keyId: 9, endpoint: "messages", model: "m ☃", provider: "p", upstreamModel: "u", stream: true, status: 201, errorCode: "e",
      inputTokens: 2 ** 40, outputTokens: 0, cacheReadTokens: 3, cacheWriteTokens: 4, cacheWrite1hTokens: 5, webSearches: 6, serviceTier: "flex",
      images: 2, imageInputTokens: 8, imageOutputTokens: 9, costNano: Number.MAX_SAFE_INTEGER, latencyMs: 1234.6, attempts: 3, clientIp: "::1",
    });
    const alone = full();
    log.write(alone);
    await log.flush();
    const batched = [full(), { ...row(), stream: false }];
    for (const r of batched) log.write(r);
    await log.flush();
    const { request_id: _, created_at: __, ...want } = (await stored(o, alone.requestId))!;
    expect(await stored(o, batched[0]!.requestId)).toMatchObject(want);
    expect(await stored(o, batched[1]!.requestId)).toMatchObject({ stream: false, account_id: null, cost_nano: 0, attempts: 0, latency_ms: 12 });
  });

  it("keeps a row whose text holds U+0000 (which PostgreSQL's text refuses), written as U+FFFD", async () => {
    const log = new PgRequestLog(pgOf(o));
    const nul = row({ model: "gpt\u0000x", status: 404 });
    log.write(nul);
    log.write(row());
    await log.flush();
    expect(await stored(o, nul.requestId)).toMatchObject({ model: "gpt\uFFFDx", status: 404 });
  });

  it("sends a turn's rows without flush, on the next turn", async () => {
    const log = new PgRequestLog(pgOf(o));
    const r = row();
    log.write(r);
    for (let i = 0; i < 50 && !(await stored(o, r.requestId)); i++) await Bun.sleep(10);
    expect(await stored(o, r.requestId)).not.toBeNull();
  });

  it("splits a turn of many rows into statements PostgreSQL accepts", async () => {
    const log = new PgRequestLog(counted());
    statements = 0;
    for (let i = 0; i < 2_500; i++) log.write(row());
    await log.flush();
    expect(statements).toBe(3);
  });

  it("writes a row given the hold's transaction through it: committed with it, rolled back with it", async () => {
    const log = new PgRequestLog(pgOf(o));
    const [kept, dropped] = [row(), row()];
    await sql.begin(async (tx) => log.write(kept, tx));
    await expect(sql.begin(async (tx) => {
      await log.write(dropped, tx);
      throw new Error("charge refused");
    })).rejects.toThrow("charge refused");
    expect(await stored(o, kept.requestId)).not.toBeNull();
    expect(await stored(o, dropped.requestId)).toBeNull();
  });

  it("tells onRow of a row written through a transaction once it committed, never of one rolled back", async () => {
    const told: LogRow[] = [];
    const log = new PgRequestLog(pgOf(o), { onRow: (r) => told.push(r) });
    const [kept, dropped] = [row(), row()];
    const tell = await sql.begin(async (tx) => {
      const t = await log.write(kept, tx);
      expect(told).toEqual([]);
      return t;
    });
    tell?.();
    await expect(sql.begin(async (tx) => {
      await log.write(dropped, tx);
      throw new Error("charge refused");
    })).rejects.toThrow("charge refused");
    expect(told).toEqual([kept]);
  });

  it("fails the transaction whose row is refused, with an operator event, and tells onRow nothing", async () => {
    const told: LogRow[] = [];
    const log = new PgRequestLog(pgOf(o), { onRow: (r) => told.push(r) });
    const bad = row({ status: null as never });
    lines = [];
    await expect(sql.begin(async (tx) => log.write(bad, tx))).rejects.toThrow();
    expect(told).toEqual([]);
    expect(lines.map((l) => JSON.parse(l)).some((e) => e.event === "request_log_write_failed" && e.request_id === bad.requestId)).toBe(true);
  });

  it("reports every row of a turn when the database is unreachable, never throwing", async () => {
    const log = new PgRequestLog({ $client: { unsafe: () => Promise.reject(new Error("connection refused")) } } as never);
    lines = [];
    const rows = [row(), row()];
    for (const r of rows) log.write(r);
    await log.flush();
    expect(lines.map((l) => JSON.parse(l)).filter((e) => e.event === "request_log_write_failed").map((e) => e.request_id)).toEqual(rows.map((r) => r.requestId));
  });
});
