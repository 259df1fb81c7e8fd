import { asc, count, eq } from "drizzle-orm";
import type { Db } from "../engine/sqlite/client.ts";
import { accountNotes, accounts, requestLogs } from "../schema/sqlite.ts";
import type { AccountNote, AccountPage, AdminQueries, TotalsRow } from "./contract.ts";
import { searchWhere, totalsColumns, totalsRow, totalsWhere } from "./queries.ts";

// The console's queries on SQLite, the embedded default.

const ACCOUNT = {
  id: accounts.id,
  email: accounts.email,
  balanceNano: accounts.balanceNano,
  disabledAt: accounts.disabledAt,
  admin: accounts.admin,
  lowBalanceNano: accounts.lowBalanceNano,
  createdAt: accounts.createdAt,
};

export class AdminSqlite implements AdminQueries {
  constructor(private readonly db: Db) {}

  async totals(monthStart: number, dayStart: number): Promise<TotalsRow[]> {
    const rows = await this.db
      .select(totalsColumns(requestLogs, dayStart))
      .from(requestLogs)
      .where(totalsWhere(requestLogs, monthStart))
      .groupBy(requestLogs.model, requestLogs.provider);
    return rows.map(totalsRow);
  }

  async searchAccounts(text: string, offset: number, limit: number): Promise<AccountPage> {
    const where = searchWhere(accounts, text);
    const [page, [n]] = await Promise.all([
      this.db.select(ACCOUNT).from(accounts).where(where).orderBy(asc(accounts.id)).limit(limit).offset(offset),
      this.db.select({ n: count() }).from(accounts).where(where),
    ]);
    return { accounts: page, total: n?.n ?? 0 };
  }

  async noteOf(accountId: number): Promise<AccountNote | null> {
    const [row] = await this.db.select({ note: accountNotes.note, updatedAt: accountNotes.updatedAt, updatedBy: accountNotes.updatedBy }).from(accountNotes).where(eq(accountNotes.accountId, accountId));
    return row ?? null;
  }

  async setNote(accountId: number, note: string, by: number | null, now = Date.now()): Promise<void> {
    if (note === "") {
      await this.db.delete(accountNotes).where(eq(accountNotes.accountId, accountId));
      return;
    }
    const row = { accountId, note, updatedAt: now, updatedBy: by };
    await this.db.insert(accountNotes).values(row).onConflictDoUpdate({ target: accountNotes.accountId, set: { note, updatedAt: now, updatedBy: by } });
  }
}
