import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { requestIdPrefixAt } from "../../src/core/request-id.ts";
import { PgAdmin } from "../../src/store/admin/postgres.ts";
import { AdminSqlite } from "../../src/store/admin/sqlite.ts";
import type { AdminQueries } from "../../src/store/admin/contract.ts";
import { accountStore, ENGINES, stopEngines, type Opened } from "../support/ledger-engines.ts";

// The admin page's queries (store/admin/), one suite on both engines: the gateway's totals over the
// request log, the account search and the operator's notes.

setDefaultTimeout(30_000);
const HOUR = 3600 * 1000;
const MONTH = Date.UTC(2026, 2, 1);
const DAY = Date.UTC(2026, 2, 10);
let seq = 0;
afterAll(() => stopEngines());

async function logRow(o: Opened, r: { model: string | null; provider: string | null; status: number; costNano: number; at: number }): Promise<void> {
  const id = `${requestIdPrefixAt(r.at)}adm${String(++seq).padStart(6, "0")}`;
  const values = [id, r.model, r.provider, r.status, r.costNano, r.at];
  const insert = `INSERT INTO request_logs (request_id, method, path, model, provider, status, cost_nano, latency_ms, created_at)
    VALUES ($1, 'POST', '/v1/messages', $2, $3, $4, $5, 5, $6)`;
  if (o.engine === "sqlite") o.db.$client.run(insert.replace(/\$(\d)/g, "?$1"), values as never);
  else await o.db.$client.unsafe(insert, values);
}

for (const engine of ENGINES) {
  describe(`the admin queries on ${engine.name}`, () => {
    let o: Opened;
    let q: AdminQueries;
    const ids: number[] = [];
    beforeAll(async () => {
      o = await engine.open();
      q = o.engine === "sqlite" ? new AdminSqlite(o.db) : new PgAdmin(o.db);
      const accounts = accountStore(o);
      for (const email of ["ann@example.com", "bob@example.com", "a_b%c@other.test", "zed@other.test"]) ids.push((await accounts.create(email)).id);
      await logRow(o, { model: "m1", provider: "p1", status: 200, costNano: 100, at: MONTH - HOUR }); // last month: left out
      await logRow(o, { model: "m1", provider: "p1", status: 200, costNano: 30, at: MONTH + HOUR });
      await logRow(o, { model: "m1", provider: "p2", status: 502, costNano: 0, at: DAY + HOUR });
      await logRow(o, { model: "m2", provider: "p1", status: 200, costNano: 7, at: DAY + 2 * HOUR });
      await logRow(o, { model: null, provider: null, status: 401, costNano: 0, at: DAY + 3 * HOUR });
    });
    afterAll(() => o.close());

    it("sums the month's and today's requests, failures and cost per model and provider", async () => {
      const rows = (await q.totals(MONTH, DAY)).sort((a, b) => `${a.model}/${a.provider}`.localeCompare(`${b.model}/${b.provider}`));
      expect(rows).toEqual([
        { model: "m1", provider: "p1", month: { requests: 1, failed: 0, costNano: 30 }, today: { requests: 0, failed: 0, costNano: 0 } },
        { model: "m1", provider: "p2", month: { requests: 1, failed: 1, costNano: 0 }, today: { requests: 1, failed: 1, costNano: 0 } },
        { model: "m2", provider: "p1", month: { requests: 1, failed: 0, costNano: 7 }, today: { requests: 1, failed: 0, costNano: 7 } },
        { model: null, provider: null, month: { requests: 1, failed: 1, costNano: 0 }, today: { requests: 1, failed: 1, costNano: 0 } },
      ]);
    });

    it("finds accounts by part of the email, case-insensitive, with the total", async () => {
      const page = await q.searchAccounts("EXAMPLE", 0, 10);
      expect(page.accounts.map((a) => a.email)).toEqual(["ann@example.com", "bob@example.com"]);
      expect(page.total).toBe(2);
    });

    it("reads % and _ in the text as themselves", async () => {
      expect((await q.searchAccounts("a_b%", 0, 10)).accounts.map((a) => a.email)).toEqual(["a_b%c@other.test"]);
      expect((await q.searchAccounts("_", 0, 10)).accounts.map((a) => a.email)).toEqual(["a_b%c@other.test"]);
    });

    it("finds an account by its id", async () => {
      expect((await q.searchAccounts(String(ids[3]), 0, 10)).accounts.map((a) => a.id)).toContain(ids[3]!);
    });

    it("pages every account oldest first, counting them all", async () => {
      const first = await q.searchAccounts("", 0, 3);
      const second = await q.searchAccounts("", 3, 3);
      expect(first.accounts.map((a) => a.id)).toEqual(ids.slice(0, 3));
      expect(second.accounts.map((a) => a.id)).toEqual(ids.slice(3));
      expect(first.total).toBe(4);
    });

    it("keeps, replaces and removes an account's note", async () => {
      expect(await q.noteOf(ids[0]!)).toBeNull();
      await q.setNote(ids[0]!, "VIP, invoice monthly", ids[1]!, 1000);
      expect(await q.noteOf(ids[0]!)).toEqual({ note: "VIP, invoice monthly", updatedAt: 1000, updatedBy: ids[1]! });
      await q.setNote(ids[0]!, "paid by wire", null, 2000);
      expect(await q.noteOf(ids[0]!)).toEqual({ note: "paid by wire", updatedAt: 2000, updatedBy: null });
      await q.setNote(ids[0]!, "", null, 3000);
      expect(await q.noteOf(ids[0]!)).toBeNull();
    });
  });
}
