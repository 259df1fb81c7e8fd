import type { checkoutSessions } from "../schema/sqlite.ts";

// The checkout_sessions table's one owner: the Stripe Checkout Sessions this gateway opened for
// top-ups, each with the amount it asked for, and a paid session's credit. Cold paths (a top-up is
// started or paid a few times a day): async on both engines. The rules of a top-up (amounts, the
// webhook's checks) are payments/topups.ts's; tests/payments/checkout-contract.test.ts runs both engines.

export type CheckoutSession = typeof checkoutSessions.$inferSelect;

export interface CheckoutStore {
  /** A session just created at Stripe for `accountId`, waiting for its payment. */
  record(id: string, accountId: number, amountNano: number, now?: number): Promise<void>;
  find(id: string): Promise<CheckoutSession | null>;
  /** The account's sessions, newest first. */
  of(accountId: number, limit?: number): Promise<CheckoutSession[]>;
  /** A credited session's receipt (docs/dashboard.md#receipts): its top_up entry and its account; null for any other id. */
  receiptOf(id: string): Promise<TopUpReceipt | null>;
}

/** What a top-up's receipt says, as the books have it. */
export interface TopUpReceipt {
  sessionId: string;
  accountId: number;
  /** The account's address now: a closed account's is anonymised. */
  email: string;
  amountNano: number;
  creditedAt: number;
  /** The top_up entry's id: the receipt's number. */
  entryId: number;
  /** Stripe's payment id (pi_…), the entry's external_ref. */
  paymentRef: string | null;
}

/**
 * A paid session's credit, in one transaction: the session marked credited and the top_up entry. A
 * second delivery, even one that passed the webhook's checks at the same time, finds the session
 * credited; the payment's id as external_ref (a unique index) stops a second entry for one payment.
 * Null when credited, else why not.
 */
export interface TopUpCredit {
  credit(row: CheckoutSession, paymentRef: string): Promise<string | null>;
}

export const creditedAlready = "credited already";
export const paymentCreditedAlready = (paymentRef: string) => `payment ${paymentRef} is credited already`;
export const topUpNote = (row: CheckoutSession) => `Stripe Checkout ${row.id}`;
