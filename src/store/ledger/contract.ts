import type { Awaitable } from "../../core/awaitable.ts";
import { GatewayError } from "../../core/errors.ts";
import { formatUsd } from "../../core/money.ts";
import type { Hold } from "../../ledger/hold.ts";
import { periodEnd, periodStart, spentInPeriod, type BudgetPeriod } from "../../ledger/budget.ts";
import type { Clock } from "../../core/time.ts";
import type { KeyBudget } from "../keys/contract.ts";

// The ledger as the relay and the account pages use it, whichever database holds the money: SQLite
// with holds in the one serving process (ledger.ts), or PostgreSQL shared by several instances with
// holds as rows (postgres.ts). tests/ledger/contract.test.ts holds both to the same behaviour.

export type { Awaitable };

export type CreditKind = "registration_credit" | "top_up" | "operator_credit" | "redemption";

export interface BalanceView {
  balanceNano: number;
  reservedNano: number;
  spendableNano: number;
}

export interface KeySpendView {
  /** Charged to the key so far (api_keys.spent_nano, the ledger's column). */
  spentNano: number;
  /** Held by the key's running requests. */
  reservedNano: number;
  /** The key's budget that resets, and its spend in the current period; null when it has none. */
  budget: BudgetSpend | null;
}

export interface BudgetSpend {
  nano: number;
  period: BudgetPeriod;
  /** Charged to the key since the current period started. */
  spentNano: number;
  /** When the period ends and the budget is whole again (unix ms). */
  resetsAt: number;
  /** A request was refused for this budget in the current period (the "budget reached" notice). */
  reached: boolean;
}

/** The budget columns of a key's row as both engines read them (ledger/budget.ts). */
export interface BudgetColumns {
  budget: KeyBudget | null;
  periodStart: number;
  periodSpentNano: number;
  reachedAt: number | null;
}

/** The spend of the budget in the period that contains `now`; null when the key has no budget. */
export function budgetSpend(c: BudgetColumns, now: number): BudgetSpend | null {
  const b = c.budget;
  if (!b) return null;
  const spentNano = spentInPeriod(b.period, c.periodStart, c.periodSpentNano, now);
  return { nano: b.nano, period: b.period, spentNano, resetsAt: periodEnd(b.period, now), reached: c.reachedAt !== null && c.reachedAt >= periodStart(b.period, now) };
}

/** The holds this process took and has not resolved: what a stop waits for, what the metrics show. */
export interface OpenHolds {
  readonly count: number;
  readonly total: number;
}

export interface MoneyLedger {
  readonly holds: OpenHolds;
  /** The time the budgets are read at: the system's, or a test's. */
  readonly clock: Clock;
  /** Holds an estimate against the account balance and the key's quota, or refuses (402 insufficient_balance, 429 quota). */
  reserve(requestId: string, accountId: number, keyId: number, amountNano: number): Awaitable<Hold>;
  /** Adds money with its ledger row; false when `externalRef` was credited already. */
  credit(accountId: number, amountNano: number, kind: CreditKind, note?: string | null, externalRef?: string | null): Awaitable<boolean>;
  balance(accountId: number): Awaitable<BalanceView>;
  /** What the key has spent and holds; null when no key has this id. */
  keySpend(keyId: number): Awaitable<KeySpendView | null>;
  /** Why this process cannot take a hold now beyond what the database's probe sees (GET /readyz), or null. */
  writeRefusal(): GatewayError | null;
  /** This process's `[cluster] instance_id`, null on SQLite (one server, no instances). */
  readonly instanceId: string | null;
  /** The instances heartbeating on the shared database, by id, with their holds; none on SQLite. */
  instances(): Awaitable<InstanceView[]>;
  /** Writes this instance's last reload on its row, for the fleet to see (docs/scaling.md#reloading-the-fleet); nothing on SQLite. */
  recordReload(reload: ReloadRecord): Awaitable<void>;
}

/** An instance's last reload of its config, as it told the fleet. */
export interface ReloadRecord {
  /** The `gateway reload` of the fleet that asked for it; null for a SIGHUP or a POST /reload. */
  request: string | null;
  reloaded: boolean;
  /** The one-line reason of a refused file; null when it was applied. */
  error: string | null;
  source: string | null;
  catalogVersion: string | null;
  models: number | null;
  providers: number | null;
  needsRestart: string[];
}

export interface InstanceView {
  id: string;
  /** Its last heartbeat, on the database's clock (unix ms). */
  heartbeatAt: number;
  holds: number;
  heldNano: number;
  /** Its last reload since it started, with when it was recorded (database clock); null when it has not reloaded. */
  lastReload: (ReloadRecord & { at: number }) | null;
}

// The two refusals of a reserve, worded once for both implementations.

export function quotaRefused(quotaNano: number, spentNano: number, heldNano: number, amountNano: number): GatewayError {
  return new GatewayError(
    "quota",
    `This key's quota of ${formatUsd(quotaNano)} USD would be exceeded (spent ${formatUsd(spentNano)} USD, ` +
      `${formatUsd(heldNano)} USD held by running requests, this request needs up to ${formatUsd(amountNano)} USD). ` +
      "Raise the key's quota or use another key.",
  );
}

export function balanceRefused(amountNano: number, spendableNano: number): GatewayError {
  return new GatewayError(
    "insufficient_balance",
    `Your credit balance is too low: this request needs up to ${formatUsd(amountNano)} USD and ${formatUsd(Math.max(spendableNano, 0))} USD is spendable. ` +
      "Top up your balance or lower max_tokens.",
  );
}

/**
 * The most an account holds: 2^53 - 1 nano-dollars (9 007 199.254740991 USD), the largest whole number
 * a JavaScript number keeps exactly. Past it every figure read from the database (the balance, the
 * checks of a debit, the pages) would be off by a few nano-dollars though the ledger's sum is exact.
 */
export const MAX_BALANCE_NANO = Number.MAX_SAFE_INTEGER;

/** A credit that would take the balance past MAX_BALANCE_NANO: refused, nothing written. */
export function balanceCeiling(amountNano: number, balanceNano: number): GatewayError {
  return new GatewayError(
    "invalid_request",
    `A credit of ${formatUsd(amountNano)} USD would take the balance of ${formatUsd(balanceNano)} USD past ${formatUsd(MAX_BALANCE_NANO)} USD, the most one account can hold; nothing was credited.`,
  );
}

export function checkCreditAmount(amountNano: number): void {
  if (!Number.isSafeInteger(amountNano) || amountNano <= 0) throw new RangeError("a credit must be a positive whole number of nano-dollars");
}
