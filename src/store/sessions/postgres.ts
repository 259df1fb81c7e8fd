import { and, eq, isNull, ne } from "drizzle-orm";
import type { PgDb } from "../engine/postgres/client.ts";
import { accounts, sessions } from "../schema/postgres.ts";
import { hashToken, liveSession, newToken, type SessionStore, type SessionView } from "./contract.ts";

/** The sessions table's one owner on PostgreSQL: any instance may open, find or end a session. `[database] url`. */
export class PgSessions implements SessionStore {
  constructor(
    private readonly db: PgDb,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  async open(accountId: number): Promise<{ token: string; expiresAt: number }> {
    const token = newToken();
    const now = this.now();
    const expiresAt = now + this.ttlMs;
    await this.db.insert(sessions).values({ id: hashToken(token), accountId, createdAt: now, expiresAt, lastSeenAt: now });
    return { token, expiresAt };
  }

  async find(token: string): Promise<SessionView | null> {
    const now = this.now();
    const [row] = await this.db
      .select({ id: sessions.id, accountId: sessions.accountId, expiresAt: sessions.expiresAt, lastSeenAt: sessions.lastSeenAt, revokedAt: sessions.revokedAt, accountDisabledAt: accounts.disabledAt })
      .from(sessions)
      .innerJoin(accounts, eq(accounts.id, sessions.accountId))
      .where(eq(sessions.id, hashToken(token)));
    const live = liveSession(row, now);
    // Two instances touching at once both write the same minute: either is right.
    if (live?.touch) await this.db.update(sessions).set({ lastSeenAt: now }).where(eq(sessions.id, live.view.id));
    return live?.view ?? null;
  }

  async revoke(token: string): Promise<void> {
    await this.db.update(sessions).set({ revokedAt: this.now() }).where(and(eq(sessions.id, hashToken(token)), isNull(sessions.revokedAt)));
  }

  async revokeAll(accountId: number, keep: string | null = null): Promise<number> {
    const live = and(eq(sessions.accountId, accountId), isNull(sessions.revokedAt), keep === null ? undefined : ne(sessions.id, keep));
    return (await this.db.update(sessions).set({ revokedAt: this.now() }).where(live).returning({ id: sessions.id })).length;
  }
}
