import { asc, count, eq, or, sql, type SQL } from "drizzle-orm";
import type { Either } from "../engine/either.ts";
import type { accounts, requestLogs } from "../schema/postgres.ts";
import { accountColumns } from "../accounts/rules.ts";
import { logWhere } from "../reports/filters.ts";
import { containsPattern, idOf, type AccountNote, type AccountPage, type AdminQueries, type TotalsRow } from "./contract.ts";

/** A sum as a JavaScript number on both engines (PostgreSQL sums bigint as numeric, a string). */
const total = (expr: SQL) => sql<number>`coalesce(sum(${expr}), 0)`.mapWith(Number);

/** The columns of the totals query: per (model, provider), the month's and today's counts and cost. */
function totalsColumns(t: typeof requestLogs, dayStart: number) {
  const failed = sql`case when ${t.status} >= 400 then 1 else 0 end`;
  const today = (then: SQL) => sql`case when ${t.createdAt} >= ${dayStart} then ${then} else 0 end`;
  return {
    model: sql<string | null>`${t.model}`,
    provider: sql<string | null>`${t.provider}`,
    requests: total(sql`1`),
    failed: total(failed),
    costNano: total(sql`${t.costNano}`),
    todayRequests: total(today(sql`1`)),
    todayFailed: total(today(failed)),
    todayCostNano: total(today(sql`${t.costNano}`)),
  };
}

type TotalsSelected = { [K in keyof ReturnType<typeof totalsColumns>]: K extends "model" | "provider" ? string | null : number };

const totalsRow = (r: TotalsSelected): TotalsRow => ({
  model: r.model,
  provider: r.provider,
  month: { requests: r.requests, failed: r.failed, costNano: r.costNano },
  today: { requests: r.todayRequests, failed: r.todayFailed, costNano: r.todayCostNano },
});

/** The search's condition: the email contains the text, or the id is it. */
function searchWhere(t: typeof accounts, text: string): SQL | undefined {
  const trimmed = text.trim();
  if (trimmed === "") return undefined;
  const id = idOf(trimmed);
  const byEmail = sql`lower(${t.email}) like ${containsPattern(trimmed)} escape '\\'`;
  return id === null ? byEmail : or(byEmail, eq(t.id, id));
}

/** The console's queries, written once for both engines (the two files of this folder only hand over their database). */
export class AdminOn implements AdminQueries {
  constructor(private readonly on: Either) {}

  async totals(monthStart: number, dayStart: number): Promise<TotalsRow[]> {
    const { db, t } = this.on;
    const rows = await db
      .select(totalsColumns(t.requestLogs, dayStart))
      .from(t.requestLogs)
      .where(logWhere({ since: monthStart }, t.requestLogs))
      .groupBy(t.requestLogs.model, t.requestLogs.provider);
    return rows.map(totalsRow);
  }

  async searchAccounts(text: string, offset: number, limit: number): Promise<AccountPage> {
    const { db, t } = this.on;
    const where = searchWhere(t.accounts, text);
    const [page, [n]] = await Promise.all([
      db.select(accountColumns(t.accounts)).from(t.accounts).where(where).orderBy(asc(t.accounts.id)).limit(limit).offset(offset),
      db.select({ n: count() }).from(t.accounts).where(where),
    ]);
    return { accounts: page, total: n?.n ?? 0 };
  }

  async noteOf(accountId: number): Promise<AccountNote | null> {
    const { db, t } = this.on;
    const [row] = await db.select({ note: t.accountNotes.note, updatedAt: t.accountNotes.updatedAt, updatedBy: t.accountNotes.updatedBy }).from(t.accountNotes).where(eq(t.accountNotes.accountId, accountId));
    return row ?? null;
  }

  async setNote(accountId: number, note: string, by: number | null, now = Date.now()): Promise<void> {
    const { db, t } = this.on;
    if (note === "") {
      await db.delete(t.accountNotes).where(eq(t.accountNotes.accountId, accountId));
      return;
    }
    const row = { accountId, note, updatedAt: now, updatedBy: by };
    await db.insert(t.accountNotes).values(row).onConflictDoUpdate({ target: t.accountNotes.accountId, set: { note, updatedAt: now, updatedBy: by } });
  }
}
