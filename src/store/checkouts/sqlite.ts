import { and, eq } from "drizzle-orm";
import { onSqlite } from "../engine/either.ts";
import type { Db } from "../engine/sqlite/client.ts";
import type { GroupCommit } from "../commits/sqlite.ts";
import { checkoutSessions } from "../schema/sqlite.ts";
import { creditedAlready, paymentCreditedAlready, topUpNote, type CheckoutSession, type CheckoutStore, type TopUpCredit } from "./contract.ts";
import { CheckoutsOn } from "./queries.ts";

/** The ledger's credit on SQLite, synchronous inside the group commit's transaction. */
interface SqliteCredit {
  credit(accountId: number, amountNano: number, kind: "top_up", note: string, externalRef: string): boolean;
}

/** The checkout sessions on SQLite, the embedded default: queries.ts's statements and the credit's transaction. */
export class Checkouts extends CheckoutsOn implements CheckoutStore {
  constructor(private readonly db: Db) {
    super(onSqlite(db));
  }

  /**
   * Inside the caller's transaction (the group commit's, which holds SQLite's one write lock), so
   * synchronous: the session read again, `credit` (the ledger's entry), then the session marked.
   */
  creditOnce(id: string, credit: () => string | null, now = Date.now()): string | null {
    if (this.db.select({ status: checkoutSessions.status }).from(checkoutSessions).where(eq(checkoutSessions.id, id)).get()?.status !== "pending") return creditedAlready;
    const why = credit();
    if (why !== null) return why;
    this.db
      .update(checkoutSessions)
      .set({ status: "credited", creditedAt: now })
      .where(and(eq(checkoutSessions.id, id), eq(checkoutSessions.status, "pending")))
      .run();
    return null;
  }
}

/** A paid session's credit on SQLite: one of the group commit's transactions, whose batch the webhook joins. */
export class SqliteTopUpCredit implements TopUpCredit {
  private readonly checkouts: Checkouts;

  constructor(
    db: Db,
    private readonly ledger: SqliteCredit,
    private readonly commits: GroupCommit,
  ) {
    this.checkouts = new Checkouts(db);
  }

  credit(row: CheckoutSession, paymentRef: string): Promise<string | null> {
    return this.commits.run(() =>
      this.checkouts.creditOnce(row.id, () => (this.ledger.credit(row.accountId, row.amountNano, "top_up", topUpNote(row), paymentRef) ? null : paymentCreditedAlready(paymentRef))),
    );
  }
}
