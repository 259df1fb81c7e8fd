import { eq, or, sql, type SQL } from "drizzle-orm";
import type { accounts as pgAccounts, requestLogs as pgRequestLogs } from "../schema/postgres.ts";
import type { accounts, requestLogs } from "../schema/sqlite.ts";
import { logWhere } from "../reports/filters.ts";
import { containsPattern, idOf, type TotalsRow } from "./contract.ts";

// The console's statements as both engines run them: each engine's file only runs them on its own tables.

type Logs = typeof requestLogs | typeof pgRequestLogs;

/** A sum as a JavaScript number on both engines (PostgreSQL sums bigint as numeric, a string). */
const total = (expr: SQL) => sql<number>`coalesce(sum(${expr}), 0)`.mapWith(Number);

/** The columns of the totals query: per (model, provider), the month's and today's counts and cost. */
export function totalsColumns(t: Logs, dayStart: number) {
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

/** The rows made since the month's start, as the engines read them. */
export const totalsWhere = (t: Logs, monthStart: number) => logWhere({ since: monthStart }, t);

export type TotalsSelected = { [K in keyof ReturnType<typeof totalsColumns>]: K extends "model" | "provider" ? string | null : number };

export const totalsRow = (r: TotalsSelected): TotalsRow => ({
  model: r.model,
  provider: r.provider,
  month: { requests: r.requests, failed: r.failed, costNano: r.costNano },
  today: { requests: r.todayRequests, failed: r.todayFailed, costNano: r.todayCostNano },
});

/** The search's condition: the email contains the text, or the id is it. */
export function searchWhere(t: typeof accounts | typeof pgAccounts, text: string): SQL | undefined {
  const trimmed = text.trim();
  if (trimmed === "") return undefined;
  const id = idOf(trimmed);
  const byEmail = sql`lower(${t.email}) like ${containsPattern(trimmed)} escape '\\'`;
  return id === null ? byEmail : or(byEmail, eq(t.id, id));
}

