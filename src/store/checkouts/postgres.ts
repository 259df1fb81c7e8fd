import type { SQL } from "bun";
import { onPostgres } from "../engine/either.ts";
import type { PgDb } from "../engine/postgres/client.ts";
import { checkoutSessions } from "../schema/postgres.ts";
import { creditedAlready, paymentCreditedAlready, topUpNote, type CheckoutSession, type CheckoutStore, type TopUpCredit } from "./contract.ts";
import { CheckoutsOn } from "./queries.ts";

/** The ledger's credit on PostgreSQL, joining the caller's transaction `tx`. */
interface PgCredit {
  credit(accountId: number, amountNano: number, kind: "top_up", note: string, externalRef: string, tx: SQL): Promise<boolean>;
}

/** The checkout sessions on PostgreSQL (`[database] url`), the shared engine: queries.ts's statements and the credit's transaction. */
export class PgCheckouts extends CheckoutsOn implements CheckoutStore {
  constructor(private readonly db: PgDb) {
    super(onPostgres(db));
  }

  /**
   * One transaction: the session marked credited, then `credit` (the ledger's, joining the
   * transaction); null when both took, else why not, and nothing is kept. The row's lock makes a
   * second delivery, on this instance or another, wait for this transaction and then find the
   * session credited (or pending again, if this one rolled back). Raw SQL: the ledger writes through
   * Bun's SQL transaction, which Drizzle's query builder cannot join.
   */
  async creditOnce(id: string, credit: (tx: SQL) => Promise<string | null>, now = Date.now()): Promise<string | null> {
    try {
      await this.db.$client.begin(async (tx) => {
        const marked = await tx`UPDATE checkout_sessions SET status = 'credited', credited_at = ${now}::bigint WHERE id = ${id} AND status = 'pending' RETURNING id`;
        if (marked.length === 0) throw new NotCredited(creditedAlready);
        const why = await credit(tx);
        if (why !== null) throw new NotCredited(why);
      });
      return null;
    } catch (e) {
      if (e instanceof NotCredited) return e.why;
      throw e;
    }
  }
}

/** Why a top-up's transaction credited nothing: thrown inside it so that it rolls back. */
class NotCredited extends Error {
  constructor(readonly why: string) {
    super(why);
  }
}

/**
 * A paid session's credit on PostgreSQL: the session marked first (PgCheckouts.creditOnce, whose row
 * lock queues a second delivery), then the ledger's credit in the same transaction, whose ON CONFLICT
 * on external_ref stops a second entry for one payment and then rolls the mark back with it.
 */
export class PgTopUpCredit implements TopUpCredit {
  constructor(
    private readonly ledger: PgCredit,
    private readonly checkouts: PgCheckouts,
  ) {}

  credit(row: CheckoutSession, paymentRef: string): Promise<string | null> {
    return this.checkouts.creditOnce(row.id, async (tx) =>
      (await this.ledger.credit(row.accountId, row.amountNano, "top_up", topUpNote(row), paymentRef, tx)) ? null : paymentCreditedAlready(paymentRef),
    );
  }
}
