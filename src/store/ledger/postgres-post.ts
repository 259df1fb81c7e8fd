import type { Settlement } from "../../ledger/hold.ts";

// The post's one-request statement on PostgreSQL (store/ledger/postgres.ts), with the request's log
// row riding on it; a batch of posts (postgres-batch.ts) falls back to it whenever a charge meets a cap.

/**
 * The start of the key's budget period now, from the three starts passed as `$first`… (day, week,
 * month: ledger/budget.ts periodStarts), so that the statement needs no calendar of its own.
 */
export const currentStart = (k: string, first: number) =>
  `(CASE ${k}budget_period WHEN 'day' THEN $${first}::bigint WHEN 'week' THEN $${first + 1}::bigint ELSE $${first + 2}::bigint END)`;

/**
 * The post's one statement: the hold row deleted (nothing when a silent-instance release took it
 * already), the account's and the key's rows locked, the charge capped at the balance, at what the
 * key's quota has left and at what its budget has left in the period (the rest is shortfall), both
 * rows (the lifetime spend and the period's counter, restarted when the period changed) and the entry
 * written. Nothing to charge: no ledger row, as on SQLite. $1 hold, $2 account, $3 key, $4 cost,
 * $5 request, $6 now, $7-$9 the periods' starts.
 */
const POST_PARAMS = 9;
export const POST = `WITH h AS (DELETE FROM holds WHERE id = $1 RETURNING amount_nano),
  a0 AS (SELECT balance_nano FROM accounts WHERE id = $2 FOR UPDATE),
  k0 AS (SELECT quota_nano, spent_nano, budget_nano, period_start, period_spent_nano, ${currentStart("", 7)} AS cur FROM api_keys WHERE id = $3 FOR UPDATE),
  c AS (SELECT
      LEAST($4::bigint, GREATEST((SELECT balance_nano FROM a0), 0),
        (SELECT CASE WHEN quota_nano IS NULL THEN $4::bigint ELSE GREATEST(quota_nano - spent_nano, 0) END FROM k0),
        (SELECT CASE WHEN budget_nano IS NULL THEN $4::bigint
          ELSE GREATEST(budget_nano - CASE WHEN period_start = cur THEN period_spent_nano ELSE 0 END, 0) END FROM k0)) AS charged,
      coalesce((SELECT amount_nano FROM h), 0) AS released),
  a AS (UPDATE accounts SET balance_nano = balance_nano - c.charged, held_nano = held_nano - c.released FROM c WHERE id = $2),
  k AS (UPDATE api_keys SET spent_nano = api_keys.spent_nano + c.charged, held_nano = held_nano - c.released,
      period_spent_nano = CASE WHEN k0.budget_nano IS NULL THEN k0.period_spent_nano WHEN k0.period_start = k0.cur THEN k0.period_spent_nano + c.charged ELSE c.charged END,
      period_start = CASE WHEN k0.budget_nano IS NULL THEN k0.period_start ELSE k0.cur END
    FROM c, k0 WHERE api_keys.id = $3),
  e AS (INSERT INTO ledger_entries (account_id, kind, amount_nano, shortfall_nano, key_id, request_id, created_at)
    SELECT $2, 'charge', -c.charged, $4::bigint - c.charged, $3, $5, $6::bigint FROM c WHERE $4::bigint > 0)
SELECT charged FROM c`;

/** The post's statement with a rider's INSERT as its first part, the rider's `$n` placed after the post's own. */
const withRider = (text: string) => POST.replace("WITH ", `WITH log AS (${text.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + POST_PARAMS}`)}),\n`);

/** Built once per rider text (there is one: the log row's), not per request: the rewrite showed in the profile. */
const ridden = new Map<string, string>();

export const settled = (cost: number, rows: { charged: string | number }[]): Settlement => {
  const chargedNano = Number(rows[0]!.charged);
  return { chargedNano, shortfallNano: cost - chargedNano };
};

/** The post's statement text with `riderText` as its first part (the plain one without). */
export function postText(riderText: string | undefined): string {
  if (!riderText) return POST;
  let text = ridden.get(riderText);
  if (!text) ridden.set(riderText, (text = withRider(riderText)));
  return text;
}
