import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { requestIdPrefixAt } from "../../src/core/request-id.ts";
import { PgLogReports } from "../../src/store/reports/postgres.ts";
import { Reports } from "../../src/store/reports/sqlite.ts";
import type { LogReports } from "../../src/store/reports/contract.ts";
import { accountStore, ENGINES, keyOf, stopEngines, type Opened } from "../support/ledger-engines.ts";

// The reports over request_logs (logs/queries.ts on SQLite, logs/pg-queries.ts on PostgreSQL), one
// suite on both engines: the same rows, filters and order.

setDefaultTimeout(30_000);
const DAY = 24 * 3600 * 1000;
const T0 = Date.UTC(2026, 2, 1, 10);
let seq = 0;
afterAll(() => stopEngines());

interface Row {
  accountId: number | null;
  keyId: number | null;
  model: string;
  status: number;
  costNano: number;
  at: number;
}

/** A log row written as a row (the request log's owner on PostgreSQL is the serving path's). */
async function logRow(o: Opened, r: Row): Promise<string> {
  const id = `${requestIdPrefixAt(r.at)}test${String(++seq).padStart(6, "0")}`;
  const values = [id, r.accountId, r.keyId, r.model, r.status, 10, 20, r.costNano, r.at];
  const insert = `INSERT INTO request_logs (request_id, account_id, key_id, method, path, model, status, input_tokens, output_tokens, cost_nano, latency_ms, created_at)
    VALUES ($1, $2, $3, 'POST', '/v1/messages', $4, $5, $6, $7, $8, 5, $9)`;
  if (o.engine === "sqlite") o.db.$client.run(insert.replace(/\$(\d)/g, "?$1"), values as never);
  else await o.db.$client.unsafe(insert, values);
  return id;
}

async function prefixOf(o: Opened, keyId: number): Promise<string> {
  if (o.engine === "sqlite") return (o.db.$client.query("SELECT prefix FROM api_keys WHERE id = ?").get(keyId) as { prefix: string }).prefix;
  const [r] = await o.db.$client`SELECT prefix FROM api_keys WHERE id = ${keyId}`;
  return r.prefix;
}

for (const engine of ENGINES) {
  describe(`the log's reports on ${engine.name}`, () => {
    let o: Opened;
    let reports: LogReports;
    let a: { id: number; email: string; keys: number[] };
    let b: { id: number; keys: number[] };
    const ids = {} as Record<"a1" | "a2" | "a3" | "b1" | "anon", string>;
    let p0: string;
    let p1: string;
    beforeAll(async () => {
      o = await engine.open();
      reports = o.engine === "sqlite" ? new Reports(o.db) : new PgLogReports(o.db);
      const accounts = accountStore(o);
      const first = await accounts.create("first@reports.test");
      a = { id: first.id, email: first.email, keys: [await keyOf(o, first.id), await keyOf(o, first.id)] };
      const second = await accounts.create("second@reports.test");
      b = { id: second.id, keys: [await keyOf(o, second.id), await keyOf(o, second.id)] };
      [p0, p1] = [await prefixOf(o, a.keys[0]!), await prefixOf(o, a.keys[1]!)];
      ids.a1 = await logRow(o, { accountId: a.id, keyId: a.keys[0]!, model: "m1", status: 200, costNano: 100, at: T0 });
      ids.a2 = await logRow(o, { accountId: a.id, keyId: a.keys[1]!, model: "m2", status: 402, costNano: 0, at: T0 + 1000 });
      ids.a3 = await logRow(o, { accountId: a.id, keyId: a.keys[0]!, model: "m1", status: 200, costNano: 50, at: T0 + DAY });
      ids.b1 = await logRow(o, { accountId: b.id, keyId: b.keys[0]!, model: "m1", status: 503, costNano: 7, at: T0 + 2000 });
      ids.anon = await logRow(o, { accountId: null, keyId: null, model: "m1", status: 401, costNano: 0, at: T0 + 3000 });
    });
    afterAll(() => o.close());

    it("lists the newest rows first with the account's email and the key's prefix, at most the limit", async () => {
      const rows = await reports.list({}, 3);
      expect(rows.map((r) => r.requestId)).toEqual([ids.a3, ids.anon, ids.b1]);
      expect(rows[0]).toMatchObject({ accountEmail: a.email, keyPrefix: p0, model: "m1", status: 200, costNano: 50, stream: false, createdAt: T0 + DAY });
      expect(rows[1]).toMatchObject({ accountEmail: null, keyPrefix: null });
    });

    it("filters by account, keys, model, status range and time", async () => {
      const list = async (f: Parameters<LogReports["list"]>[0]) => (await reports.list(f, 100)).map((r) => r.requestId);
      expect(await list({ accountId: a.id })).toEqual([ids.a3, ids.a2, ids.a1]);
      expect(await list({ keyIds: [a.keys[1]!, b.keys[0]!] })).toEqual([ids.b1, ids.a2]);
      expect(await list({ model: "m2" })).toEqual([ids.a2]);
      expect(await list({ status: { min: 400, max: 499 } })).toEqual([ids.anon, ids.a2]);
      expect(await list({ since: T0 + 1000, until: T0 + 3000 })).toEqual([ids.b1, ids.a2]);
    });

    it("finds one request's row, and none for an id not in the log", async () => {
      expect(await reports.find(ids.b1!)).toMatchObject({ requestId: ids.b1, accountEmail: "second@reports.test", status: 503, costNano: 7 });
      expect(await reports.find("gw_unknown")).toBeNull();
    });

    it("pages several keys' rows newest first after a cursor, or gives them all without a limit", async () => {
      const first = await reports.keysPage(a.keys, {}, null, 2);
      expect(first.map((r) => r.requestId)).toEqual([ids.a3, ids.a2]);
      const next = await reports.keysPage(a.keys, {}, { createdAt: first[1]!.createdAt, requestId: first[1]!.requestId }, 2);
      expect(next.map((r) => r.requestId)).toEqual([ids.a1]);
      expect((await reports.keysPage(a.keys, { model: "m1" }, null, null)).map((r) => r.requestId)).toEqual([ids.a3, ids.a1]);
    });

    it("knows when each key was last used, leaving out keys without rows", async () => {
      expect(await reports.lastUsedByKey([...a.keys, b.keys[1]!])).toEqual(new Map([[a.keys[0]!, T0 + DAY], [a.keys[1]!, T0 + 1000]]));
      expect(await reports.lastUsedByKey([])).toEqual(new Map());
    });

    it("knows each account's last request", async () => {
      const last = await reports.lastRequestByAccount();
      expect(last.get(a.id)).toBe(T0 + DAY);
      expect(last.get(b.id)).toBe(T0 + 2000);
    });

    it("sums the spend per UTC day, account, key and model, newest day first, leaving out rows without an account", async () => {
      const rows = await reports.usage({ accountId: a.id });
      expect(rows).toEqual([
        { day: "2026-03-02", account_email: a.email, key_id: a.keys[0]!, key_prefix: p0, model: "m1", requests: 1, refused: 0, input_tokens: 10, output_tokens: 20, cost_nano: 50 },
        { day: "2026-03-01", account_email: a.email, key_id: a.keys[0]!, key_prefix: p0, model: "m1", requests: 1, refused: 0, input_tokens: 10, output_tokens: 20, cost_nano: 100 },
        { day: "2026-03-01", account_email: a.email, key_id: a.keys[1]!, key_prefix: p1, model: "m2", requests: 0, refused: 1, input_tokens: 10, output_tokens: 20, cost_nano: 0 },
      ]);
      expect((await reports.usage({ since: T0 + 1500 })).map((r) => r.cost_nano)).toEqual([50, 7]);
    });
  });
}
