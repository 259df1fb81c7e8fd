import { and, desc, eq } from "drizzle-orm";
import type { Db } from "../db/client.ts";
import { checkoutSessions } from "../db/schema.ts";

// The checkout_sessions table's one owner: the Stripe Checkout Sessions this gateway opened for
// top-ups, each with the amount it asked for. Cold paths (a top-up is started or paid a few times a
// day), through the query builder.

export type CheckoutSession = typeof checkoutSessions.$inferSelect;

/** A session just created at Stripe for `accountId`, waiting for its payment. */
export function recordCheckout(db: Db, id: string, accountId: number, amountNano: number, now = Date.now()): void {
  db.insert(checkoutSessions).values({ id, accountId, amountNano, status: "pending", createdAt: now }).run();
}

export function findCheckout(db: Db, id: string): CheckoutSession | null {
  return db.select().from(checkoutSessions).where(eq(checkoutSessions.id, id)).get() ?? null;
}

/** The account's sessions, newest first. */
export function checkoutsOf(db: Db, accountId: number, limit = 100): CheckoutSession[] {
  return db
    .select()
    .from(checkoutSessions)
    .where(eq(checkoutSessions.accountId, accountId))
    .orderBy(desc(checkoutSessions.createdAt), desc(checkoutSessions.id))
    .limit(limit)
    .all();
}

/** pending → credited, inside the caller's transaction (the one that writes its ledger entry). */
export function markCredited(db: Db, id: string, now = Date.now()): void {
  db.update(checkoutSessions)
    .set({ status: "credited", creditedAt: now })
    .where(and(eq(checkoutSessions.id, id), eq(checkoutSessions.status, "pending")))
    .run();
}
