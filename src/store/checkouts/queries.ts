import { desc, eq } from "drizzle-orm";
import type { Either } from "../engine/either.ts";
import type { CheckoutSession } from "./contract.ts";

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
}
