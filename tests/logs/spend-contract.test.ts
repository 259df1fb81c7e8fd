import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { requestIdPrefixAt } from "../../src/core/request-id.ts";
import { PgSpend } from "../../src/store/reports/summary-postgres.ts";
import { SqliteSpend } from "../../src/store/reports/summary-sqlite.ts";
import type { SpendReports } from "../../src/store/reports/contract.ts";
import { accountStore, ENGINES, keyOf, stopEngines, type Opened } from "../support/ledger-engines.ts";

// The dashboard overview's spend query (store/reports/summary*.ts), one suite on both engines: the
// same rows, sums and order.

setDefaultTimeout(30_000);
const DAY = 24 * 3600 * 1000;
// Late in a UTC day: a local-time day would put the rows a day apart on some machines.
const T0 = Date.UTC(2026, 2, 1, 23, 30);
let seq = 0;
afterAll(() => stopEngines());

interface Row {
  accountId: number | null;
  keyId: number | null;
  model: string;
  costNano: number;
  cache: [read: number | null, write5m: number | null, write1h: number | null];
  at: number;
}

async function logRow(o: Opened, r: Row): Promise<void> {
  const id = `${requestIdPrefixAt(r.at)}spend${String(++seq).padStart(6, "0")}`;
  const values = [id, r.accountId, r.keyId, r.model, r.costNano, ...r.cache, r.at];
  const insert = `INSERT INTO request_logs (request_id, account_id, key_id, method, path, model, provider, status, input_tokens, output_tokens, cost_nano,
    cache_read_tokens, cache_write_tokens, cache_write_1h_tokens, latency_ms, created_at)
    VALUES ($1, $2, $3, 'POST', '/v1/messages', $4, 'anthropic', 200, 10, 20, $5, $6, $7, $8, 5, $9)`;
  if (o.engine === "sqlite") o.db.$client.run(insert.replace(/\$(\d)/g, "?$1"), values as never);
  else await o.db.$client.unsafe(insert, values);
}

for (const engine of ENGINES) {
  describe(`the overview's spend on ${engine.name}`, () => {
    let o: Opened;
    let spend: SpendReports;
    let a: { id: number; keys: number[] };
    beforeAll(async () => {
      o = await engine.open();
      spend = o.engine === "sqlite" ? new SqliteSpend(o.db) : new PgSpend(o.db);
      const accounts = accountStore(o);
      const first = await accounts.create("first@spend.test");
      a = { id: first.id, keys: [await keyOf(o, first.id), await keyOf(o, first.id)] };
      const second = await accounts.create("second@spend.test");
      const other = await keyOf(o, second.id);
      await logRow(o, { accountId: a.id, keyId: a.keys[0]!, model: "m1", costNano: 100, cache: [1000, 200, null], at: T0 });
      await logRow(o, { accountId: a.id, keyId: a.keys[0]!, model: "m1", costNano: 5_000_000_000_001, cache: [null, null, 30], at: T0 + 60_000 });
      await logRow(o, { accountId: a.id, keyId: a.keys[1]!, model: "m2", costNano: 7, cache: [null, null, null], at: T0 + 1000 });
      await logRow(o, { accountId: a.id, keyId: a.keys[1]!, model: "m2", costNano: 50, cache: [5, 0, 0], at: T0 + DAY });
      await logRow(o, { accountId: second.id, keyId: other, model: "m1", costNano: 9, cache: [1, 1, 1], at: T0 });
      await logRow(o, { accountId: null, keyId: null, model: "m1", costNano: 0, cache: [null, null, null], at: T0 });
    });
    afterAll(() => o.close());

    it("sums one account's spend and cache tokens per UTC day, key, model and provider, oldest day first", async () => {
      expect(await spend.spend({ accountId: a.id })).toEqual([
        { day: "2026-03-01", key_id: a.keys[0]!, model: "m1", provider: "anthropic", requests: 2, cost_nano: 5_000_000_000_101, cache_read_tokens: 1000, cache_write_tokens: 230 },
        { day: "2026-03-01", key_id: a.keys[1]!, model: "m2", provider: "anthropic", requests: 1, cost_nano: 7, cache_read_tokens: 0, cache_write_tokens: 0 },
        { day: "2026-03-02", key_id: a.keys[1]!, model: "m2", provider: "anthropic", requests: 1, cost_nano: 50, cache_read_tokens: 5, cache_write_tokens: 0 },
      ]);
    });

    it("follows the key, model and time filters", async () => {
      const costs = async (f: Parameters<SpendReports["spend"]>[0]) => (await spend.spend({ accountId: a.id, ...f })).map((r) => r.cost_nano);
      expect(await costs({ keyIds: [a.keys[1]!] })).toEqual([7, 50]);
      expect(await costs({ model: "m1" })).toEqual([5_000_000_000_101]);
      expect(await costs({ since: T0 + 30_000, until: T0 + DAY })).toEqual([5_000_000_000_001]);
      expect(await costs({ keyIds: [] })).toEqual([]);
    });
  });
}
