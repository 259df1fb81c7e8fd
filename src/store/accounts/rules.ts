import { GatewayError } from "../../core/errors.ts";
import { formatUsd } from "../../core/money.ts";
import type { accounts as pgAccounts } from "../schema/postgres.ts";
import type { accounts } from "../schema/sqlite.ts";
import { alreadyClosed, type StatementItem, type StatementPosition } from "./contract.ts";

// The accounts' rules both engines apply alike: the email's form, the refusals, the statement's order.


/** The columns of an `Account`, on either engine's table: never the password's hash or the money held.
 * Each column is typed as `T`'s own, so a select keeps its engine's types (a union of both engines' columns selects nothing). */
export const accountColumns = <T extends typeof accounts | typeof pgAccounts>(t: T) => ({
  id: t.id as T["id"],
  email: t.email as T["email"],
  balanceNano: t.balanceNano as T["balanceNano"],
  disabledAt: t.disabledAt as T["disabledAt"],
  admin: t.admin as T["admin"],
  lowBalanceNano: t.lowBalanceNano as T["lowBalanceNano"],
  createdAt: t.createdAt as T["createdAt"],
  closedAt: t.closedAt as T["closedAt"],
});

export { normalizedEmail } from "../../core/email-address.ts";

export const accountExists = (email: string) => new GatewayError("invalid_request", `an account with email ${email} already exists`);

export function checkDebitAmount(amountNano: number): void {
  if (!Number.isSafeInteger(amountNano) || amountNano <= 0) throw new RangeError("a debit must be a positive whole number of nano-dollars");
}

export const noAccount = (accountId: number) => new GatewayError("invalid_request", `no account with id ${accountId}`);

export function checkThreshold(nano: number | null): void {
  if (nano !== null && !(Number.isSafeInteger(nano) && nano >= 0)) throw new RangeError("a threshold is a whole, non-negative number of nano-dollars");
}

export function debitRefused(amountNano: number, balanceNano: number, heldNano: number): GatewayError {
  const floor = heldNano > 0 ? `the ${formatUsd(heldNano)} USD held by running requests` : "zero";
  return new GatewayError("invalid_request", `a debit of ${formatUsd(amountNano)} USD would take the balance of ${formatUsd(balanceNano)} USD below ${floor}`);
}

export const DAY_MS = 24 * 3600 * 1000;

/** A place in the statement's order, newest first by (created_at, id); a day's charges sit at their latest. */

/**
 * One page of the statement: the `limit` items after `before`, among the entries up to `upTo` (the
 * newest ledger id when the first page was read: rows are append-only and ids grow, so later pages
 * see the same list while charges keep coming, and a day's group never changes between pages).
 * Credits are read along ledger_account_time; each day's charges are found by stepping back along the
 * same index one day at a time, so a page costs its days, not the account's history.
 */
export function newestFirst(items: StatementItem[], limit: number): StatementItem[] {
  items.sort((a, b) => (isEarlier(a.at, b.at) ? 1 : -1));
  return items.slice(0, limit);
}

export const isEarlier = (a: StatementPosition, b: StatementPosition) => a.createdAt < b.createdAt || (a.createdAt === b.createdAt && a.id < b.id);

/** The UTC day (YYYY-MM-DD) of a day's start in unix ms. */
export const dayOf = (start: number) => new Date(start).toISOString().slice(0, 10);

/** The newest ledger id of the whole file: where a statement's first page pins its list. */

// A closure's refusals (docs/dashboard.md#closing-the-account): nothing changed, the holder may try again.

export const requestsInFlight = (heldNano: number) =>
  new GatewayError("requests_in_flight", `Running requests hold ${formatUsd(heldNano)} USD of this account: close it once they finish (revoke the keys first to stop new ones).`);

export const notForfeited = (balanceNano: number, givenNano: number) =>
  new GatewayError(
    "balance_not_forfeited",
    `The balance is ${formatUsd(balanceNano)} USD, not the ${formatUsd(givenNano)} USD confirmed: closing forfeits it, so confirm it exactly as forfeit_usd (or spend it, or ask the operator first).`,
  );

/** The refusals of a closure, in order, given the row as the closing transaction read it; null: it may close. */
export function closureRefused(accountId: number, row: { closedAt: number | null; balanceNano: number }, heldNano: number, forfeitNano: number): GatewayError | null {
  if (row.closedAt !== null) return alreadyClosed(accountId);
  if (heldNano > 0) return requestsInFlight(heldNano);
  if (row.balanceNano !== forfeitNano) return notForfeited(row.balanceNano, forfeitNano);
  return null;
}
