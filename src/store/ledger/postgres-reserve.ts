import type { SQL } from "bun";
import { GatewayError } from "../../core/errors.ts";
import { events } from "../../core/events.ts";
import { budgetRefused, periodEnd, periodStart, periodStarts, spentInPeriod } from "../../ledger/budget.ts";
import { storedBudget } from "../keys/contract.ts";
import { currentStart } from "./postgres-post.ts";
import type { ReserveItem } from "./postgres-batch.ts";
import { balanceRefused, quotaRefused } from "./contract.ts";

// The reserve's one-request statement on PostgreSQL (store/ledger/postgres.ts) and the refusal it
// answers when the hold is not granted; a batch of reserves (postgres-batch.ts) falls back to it for
// each item the batch did not grant.

/**
 * The reserve's statement: the hold row's id, or the refusal thrown. `now` is the clock's, for the
 * budget's period; the row's created_at is the wall clock's, as every hold row's.
 */
export async function takeHold(sql: SQL, instanceId: string, { accountId, keyId, amountNano }: ReserveItem, now: number): Promise<number> {
  // One statement, outside any transaction of ours: the account's and the key's rows are locked
  // (FOR UPDATE re-reads them as they are once a concurrent writer commits), both conditions are
  // read off those rows, and the two sums and the hold row are written only when both hold. The
  // rows stay locked only while the statement runs, never across a round trip, so the requests
  // of one busy account queue for microseconds each, not milliseconds.
  const [r] = await sql.unsafe(
    `WITH ok AS (
        SELECT a.id AS account_id, k.id AS key_id,
          a.balance_nano - a.held_nano >= $1::bigint AS account_ok,
          (k.quota_nano IS NULL OR k.spent_nano + k.held_nano + $1::bigint <= k.quota_nano) AS key_ok,
          (k.budget_nano IS NULL OR CASE WHEN k.period_start = ${currentStart("k.", 6)} THEN k.period_spent_nano ELSE 0 END
            + k.held_nano + $1::bigint <= k.budget_nano) AS budget_ok
        FROM accounts a JOIN api_keys k ON k.account_id = a.id
        WHERE a.id = $2 AND k.id = $3
        FOR UPDATE OF a, k),
      take AS (SELECT account_id, key_id FROM ok WHERE account_ok AND key_ok AND budget_ok),
      a AS (UPDATE accounts SET held_nano = held_nano + $1::bigint WHERE id = (SELECT account_id FROM take) RETURNING id),
      k AS (UPDATE api_keys SET held_nano = held_nano + $1::bigint WHERE id = (SELECT key_id FROM take) RETURNING id),
      h AS (INSERT INTO holds (account_id, key_id, amount_nano, instance_id, created_at) SELECT $2, $3, $1::bigint, $4, $5::bigint FROM take RETURNING id)
    SELECT (SELECT key_ok FROM ok) AS key_ok, (SELECT budget_ok FROM ok) AS budget_ok, (SELECT id FROM h) AS hold_id`,
    [amountNano, accountId, keyId, instanceId, Date.now(), ...periodStarts(now)],
  );
  if (r.hold_id == null) throw await refusal(sql, accountId, keyId, amountNano, r, now);
  return Number(r.hold_id);
}

/**
 * Why a reserve was refused, the statement's verdict, with figures read after the fact for the
 * message only. Quota first, then the budget, then the balance, as on SQLite.
 */
async function refusal(sql: SQL, accountId: number, keyId: number, amountNano: number, verdict: { key_ok: boolean | null; budget_ok: boolean | null }, now: number): Promise<GatewayError> {
  const [r] = await sql`SELECT a.balance_nano, a.held_nano AS account_held, k.quota_nano, k.spent_nano, k.held_nano AS key_held,
      k.budget_nano, k.budget_period, k.period_start, k.period_spent_nano
    FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.id = ${keyId} AND a.id = ${accountId}`;
  if (!r || verdict.key_ok === null) return new GatewayError("no-key", "Invalid API key.");
  const [quota, spent, keyHeld] = [r.quota_nano === null ? null : Number(r.quota_nano), Number(r.spent_nano), Number(r.key_held)];
  if (!verdict.key_ok && quota !== null) return quotaRefused(quota, spent, keyHeld, amountNano);
  const budget = storedBudget(r.budget_nano, r.budget_period);
  if (!verdict.budget_ok && budget) {
    await markReached(sql, accountId, keyId, budget, now);
    return budgetRefused(budget, spentInPeriod(budget.period, Number(r.period_start), Number(r.period_spent_nano), now), keyHeld, amountNano, now);
  }
  return balanceRefused(amountNano, Number(r.balance_nano) - Number(r.account_held));
}

/** The "budget reached" notice: the instance whose UPDATE writes it first in the period tells it (events.budgetReached). */
async function markReached(sql: SQL, accountId: number, keyId: number, budget: { nano: number; period: "day" | "week" | "month" }, now: number): Promise<void> {
  try {
    const rows = await sql`UPDATE api_keys SET budget_reached_at = ${now}::bigint
      WHERE id = ${keyId} AND (budget_reached_at IS NULL OR budget_reached_at < ${periodStart(budget.period, now)}::bigint) RETURNING id`;
    if (rows.length === 1) events.budgetReached({ accountId, keyId, budgetNano: budget.nano, period: budget.period, resetsAt: periodEnd(budget.period, now) });
  } catch (e) {
    // The refusal stands without its notice.
    events.writeFailed("ledger", `budget of key ${keyId}`, e);
  }
}
