import { GatewayError } from "../core/errors.ts";
import { formatUsd } from "../core/money.ts";

// A key's budget that resets (docs/api.md#budgets): at most `budget` charged per UTC calendar day,
// week (from Monday) or month (from the 1st), beside the lifetime quota. The ledger keeps the spend
// of the period in two columns of the key's row, `period_start` and `period_spent_nano`, written by
// the same statement as spent_nano: a spend counted under an older period start is last period's,
// read as 0. So the reserve's check and the post's cap stay one statement each and O(1), and a
// period ends without any job running at its end.

export const BUDGET_PERIODS = ["day", "week", "month"] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

export const isBudgetPeriod = (p: unknown): p is BudgetPeriod => (BUDGET_PERIODS as readonly unknown[]).includes(p);

const DAY_MS = 86_400_000;

/** The start of the UTC period that contains `now`, as unix milliseconds. */
export function periodStart(period: BudgetPeriod, now: number): number {
  const d = new Date(now);
  if (period === "month") return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  const day = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  // getUTCDay: Sunday 0; a week starts on Monday.
  return period === "day" ? day : day - ((d.getUTCDay() + 6) % 7) * DAY_MS;
}

/** When the period that contains `now` ends and the next one starts. */
export function periodEnd(period: BudgetPeriod, now: number): number {
  const start = periodStart(period, now);
  if (period === "day") return start + DAY_MS;
  if (period === "week") return start + 7 * DAY_MS;
  const d = new Date(start);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

/** The starts of the three periods at `now`, in BUDGET_PERIODS' order: the SQL picks the key's by its period. */
export const periodStarts = (now: number): [number, number, number] => [periodStart("day", now), periodStart("week", now), periodStart("month", now)];

/** What a key has spent in the period that contains `now`: its counter, or 0 when the counter is of an earlier period. */
export const spentInPeriod = (period: BudgetPeriod, counterStart: number, counterNano: number, now: number): number =>
  counterStart === periodStart(period, now) ? counterNano : 0;

const ADJECTIVE: Record<BudgetPeriod, string> = { day: "daily", week: "weekly", month: "monthly" };

/** "2026-11-27T00:00:00Z": the reset as people read it, without the milliseconds that are always 0. */
export const resetText = (ms: number): string => new Date(ms).toISOString().replace(/\.000Z$/, "Z");

/** Money with cents at least ("5.00", "0.125"), as a budget's message shows it. */
const usdText = (nano: number): string => {
  const s = formatUsd(nano);
  const dot = s.indexOf(".");
  return dot < 0 ? `${s}.00` : s.length - dot < 3 ? s.padEnd(dot + 3, "0") : s;
};

/**
 * The refusal of a request the key's budget cannot cover: 429 quota (never retried by the SDKs, as
 * the quota's), with Retry-After in seconds to the reset, when the same request would pass.
 */
export function budgetRefused(budget: { nano: number; period: BudgetPeriod }, spentNano: number, heldNano: number, amountNano: number, now: number): GatewayError {
  const reset = periodEnd(budget.period, now);
  const retryAfter = Math.max(1, Math.ceil((reset - now) / 1000));
  const spent = spentNano >= budget.nano;
  return new GatewayError(
    "quota",
    `This key's ${ADJECTIVE[budget.period]} budget of ${usdText(budget.nano)} USD is ${spent ? "spent" : "too low for this request"}; it resets at ${resetText(reset)}` +
      (spent ? "." : ` (spent ${formatUsd(spentNano)} USD this ${budget.period}, ${formatUsd(heldNano)} USD held by running requests, this request needs up to ${formatUsd(amountNano)} USD).`),
    { retryAfter },
  );
}
