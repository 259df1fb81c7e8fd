import { and, desc, eq } from "drizzle-orm";
import type { Awaitable } from "../core/awaitable.ts";
import type { Db } from "../store/engine/sqlite/client.ts";
import { checkoutSessions } from "../store/schema/sqlite.ts";

// The checkout_sessions table's one owner: the Stripe Checkout Sessions this gateway opened for
// top-ups, each with the amount it asked for. Cold paths (a top-up is started or paid a few times a
// day), through the query builder.

export type CheckoutSession = typeof checkoutSessions.$inferSelect;

/**
 * The checkout sessions, whichever database holds them: `Checkouts` on SQLite, `PgCheckouts` on
 * PostgreSQL (pg-checkout-sessions.ts). Marking one credited is part of the top-up's transaction
 * (topups.ts, pg-topups.ts), so it is each engine's own method, not the interface's.
 */
export interface CheckoutStore {
  /** A session just created at Stripe for `accountId`, waiting for its payment. */
  record(id: string, accountId: number, amountNano: number, now?: number): Awaitable<void>;
  find(id: string): Awaitable<CheckoutSession | null>;
  /** The account's sessions, newest first. */
  of(accountId: number, limit?: number): Awaitable<CheckoutSession[]>;
}

export class Checkouts implements CheckoutStore {
  constructor(private readonly db: Db) {}
  record = (id: string, accountId: number, amountNano: number, now?: number) => recordCheckout(this.db, id, accountId, amountNano, now);
  find = (id: string) => findCheckout(this.db, id);
  of = (accountId: number, limit?: number) => checkoutsOf(this.db, accountId, limit);
}

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
