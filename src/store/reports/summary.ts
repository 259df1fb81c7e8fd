import { and, count, isNotNull, sql, type SQL, type SQLWrapper } from "drizzle-orm";
import type { requestLogs as pgRequestLogs } from "../schema/postgres.ts";
import type { requestLogs } from "../schema/sqlite.ts";
import type { SpendFilter, SpendRow } from "./contract.ts";
import { logWhere } from "./filters.ts";

// The dashboard overview's spend (docs/dashboard.md#overview): one definition of its columns, filter
// and order for both engines; summary-sqlite.ts and summary-postgres.ts only name their UTC day.

type Table = typeof requestLogs | typeof pgRequestLogs;

const total = (c: SQLWrapper | SQL) => sql<number>`coalesce(sum(${c}), 0)`.mapWith(Number);

/** The select's columns on either engine's table, the day being that engine's UTC date of created_at. */
export const spendColumns = (t: Table, day: SQL<string>) => ({
  day: day.as("day"),
  // As SQL rather than columns, so one definition fits either engine's select.
  key_id: sql<number | null>`${t.keyId}`.mapWith(Number),
  model: sql<string | null>`${t.model}`,
  provider: sql<string | null>`${t.provider}`,
  requests: count(),
  cost_nano: total(t.costNano),
  cache_read_tokens: total(t.cacheReadTokens),
  cache_write_tokens: total(sql`coalesce(${t.cacheWriteTokens}, 0) + coalesce(${t.cacheWrite1hTokens}, 0)`),
});

/** Only an account's rows count as its spend (a refused anonymous request has none). */
export const spendWhere = (f: SpendFilter, t: Table) => and(isNotNull(t.accountId), logWhere(f, t));

/** The grouping, by the columns' positions so the day's expression is written once. */
export const SPEND_GROUPS = sql`1, 2, 3, 4`;

const cmp = (a: string | number | null, b: string | number | null) => (a === b ? 0 : a === null ? -1 : b === null ? 1 : a < b ? -1 : 1);

/** Oldest day first, then key, model and provider, nulls first: one order whatever each engine does with NULL. */
export const spendOrder = (rows: SpendRow[]): SpendRow[] =>
  rows.sort((a, b) => cmp(a.day, b.day) || cmp(a.key_id, b.key_id) || cmp(a.model, b.model) || cmp(a.provider, b.provider));
