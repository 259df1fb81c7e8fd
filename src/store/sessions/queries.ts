import { and, eq, isNull, ne } from "drizzle-orm";
import type { Either } from "../engine/either.ts";
import { hashToken, liveSession, newToken, type SessionStore, type SessionView } from "./contract.ts";

/** The sessions table's one owner, written once for both engines: any instance may open, find or end a session. */
export class SessionsOn implements SessionStore {
  constructor(
    private readonly on: Either,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  async open(accountId: number): Promise<{ token: string; expiresAt: number }> {
    const { db, t } = this.on;
    const token = newToken();
    const now = this.now();
    const expiresAt = now + this.ttlMs;
    await db.insert(t.sessions).values({ id: hashToken(token), accountId, createdAt: now, expiresAt, lastSeenAt: now });
    return { token, expiresAt };
  }

  async find(token: string): Promise<SessionView | null> {
    const { db, t } = this.on;
    const now = this.now();
    const [row] = await db
      .select({ id: t.sessions.id, accountId: t.sessions.accountId, expiresAt: t.sessions.expiresAt, lastSeenAt: t.sessions.lastSeenAt, revokedAt: t.sessions.revokedAt, accountDisabledAt: t.accounts.disabledAt })
      .from(t.sessions)
      .innerJoin(t.accounts, eq(t.accounts.id, t.sessions.accountId))
      .where(eq(t.sessions.id, hashToken(token)));
    const live = liveSession(row, now);
    // Two instances touching at once both write the same minute: either is right.
    if (live?.touch) await db.update(t.sessions).set({ lastSeenAt: now }).where(eq(t.sessions.id, live.view.id));
    return live?.view ?? null;
  }

  async revoke(token: string): Promise<void> {
    const { db, t } = this.on;
    await db.update(t.sessions).set({ revokedAt: this.now() }).where(and(eq(t.sessions.id, hashToken(token)), isNull(t.sessions.revokedAt)));
  }

  async revokeAll(accountId: number, keep: string | null = null): Promise<number> {
    const { db, t } = this.on;
    const live = and(eq(t.sessions.accountId, accountId), isNull(t.sessions.revokedAt), keep === null ? undefined : ne(t.sessions.id, keep));
    return (await db.update(t.sessions).set({ revokedAt: this.now() }).where(live).returning({ id: t.sessions.id })).length;
  }
}
