import { and, desc, eq, isNotNull } from "drizzle-orm";
import type { Either } from "../engine/either.ts";
import { topUpNote, type CheckoutSession, type TopUpReceipt } from "./contract.ts";

/**
 * The checkout sessions' statements that read the same on both engines. The credit's transaction
 * differs (SQLite's group commit, PostgreSQL's row lock): each engine's file adds its creditOnce.
 */
export class CheckoutsOn {
  constructor(private readonly on: Either) {}

  async record(id: string, accountId: number, amountNano: number, now = Date.now()): Promise<void> {
    await this.on.db.insert(this.on.t.checkoutSessions).values({ id, accountId, amountNano, status: "pending", createdAt: now });
  }

  async find(id: string): Promise<CheckoutSession | null> {
    const { db, t } = this.on;
    const [row] = await db.select().from(t.checkoutSessions).where(eq(t.checkoutSessions.id, id));
    return row ?? null;
  }

  of(accountId: number, limit = 100): Promise<CheckoutSession[]> {
    const { db, t } = this.on;
    return Promise.resolve(
      db.select().from(t.checkoutSessions).where(eq(t.checkoutSessions.accountId, accountId)).orderBy(desc(t.checkoutSessions.createdAt), desc(t.checkoutSessions.id)).limit(limit),
    );
  }

  /** The session, its top_up entry (the credit's note names the session) and its account, in one read. */
  async receiptOf(id: string): Promise<TopUpReceipt | null> {
    const { db, t } = this.on;
    const cs = t.checkoutSessions;
    const le = t.ledgerEntries;
    const [row] = await db
      .select({ sessionId: cs.id, accountId: cs.accountId, email: t.accounts.email, amountNano: cs.amountNano, creditedAt: cs.creditedAt, entryId: le.id, paymentRef: le.externalRef })
      .from(cs)
      .innerJoin(t.accounts, eq(t.accounts.id, cs.accountId))
      .innerJoin(le, and(eq(le.accountId, cs.accountId), eq(le.kind, "top_up"), eq(le.note, topUpNote({ id } as CheckoutSession))))
      .where(and(eq(cs.id, id), eq(cs.status, "credited"), isNotNull(cs.creditedAt)))
      .limit(1);
    return row ? { ...row, accountId: Number(row.accountId), amountNano: Number(row.amountNano), creditedAt: Number(row.creditedAt), entryId: Number(row.entryId) } : null;
  }
}
