import type { PgLedger } from "../ledger/pg-ledger.ts";
import type { CheckoutSession } from "./checkout-sessions.ts";
import type { PgCheckouts } from "./pg-checkout-sessions.ts";
import { paymentCreditedAlready, topUpNote, type TopUpCredit } from "./topups.ts";

/**
 * A paid session's credit on PostgreSQL, one transaction as on SQLite (topups.ts): the session
 * marked first (PgCheckouts.creditOnce, whose row lock queues a second delivery), then the ledger's
 * credit in the same transaction, whose ON CONFLICT on external_ref stops a second entry for one
 * payment and then rolls the mark back with it.
 */
export class PgTopUpCredit implements TopUpCredit {
  constructor(
    private readonly ledger: PgLedger,
    private readonly checkouts: PgCheckouts,
  ) {}

  credit(row: CheckoutSession, paymentRef: string): Promise<string | null> {
    return this.checkouts.creditOnce(row.id, async (tx) =>
      (await this.ledger.credit(row.accountId, row.amountNano, "top_up", topUpNote(row), paymentRef, tx)) ? null : paymentCreditedAlready(paymentRef),
    );
  }
}
