import { randomBytes } from "node:crypto";
import { and, eq, isNull, ne } from "drizzle-orm";
import type { Db } from "../db/client.ts";
import { accounts, sessions } from "../db/schema.ts";

/** The dashboard's cookie: the session's random token, which the database never holds. */
export const SESSION_COOKIE = "gw_session";

// last_seen_at is written at most this often, so that a page making ten calls writes once.
const SEEN_EVERY_MS = 60_000;

export interface SessionView {
  /** SHA-256 of the token: the row's id. */
  id: string;
  accountId: number;
  expiresAt: number;
  /** Set while the operator has the account disabled. */
  accountDisabledAt: number | null;
}

const hashToken = (token: string): string => Bun.SHA256.hash(token, "hex");

/** The sessions table's one owner: open at login, find per /api/ request, revoke at logout. */
export class Sessions {
  constructor(
    private readonly db: Db,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** A new session: its token goes in the cookie, only its hash in the table. */
  open(accountId: number): { token: string; expiresAt: number } {
    // 256 bits from the system's CSPRNG; base64url fits a cookie value as it is.
    const token = randomBytes(32).toString("base64url");
    const now = this.now();
    const expiresAt = now + this.ttlMs;
    this.db.insert(sessions).values({ id: hashToken(token), accountId, createdAt: now, expiresAt, lastSeenAt: now }).run();
    return { token, expiresAt };
  }

  /** The live session of a cookie's token; null when unknown, revoked or expired. */
  find(token: string): SessionView | null {
    const now = this.now();
    const row = this.db
      .select({ id: sessions.id, accountId: sessions.accountId, expiresAt: sessions.expiresAt, lastSeenAt: sessions.lastSeenAt, revokedAt: sessions.revokedAt, accountDisabledAt: accounts.disabledAt })
      .from(sessions)
      .innerJoin(accounts, eq(accounts.id, sessions.accountId))
      .where(eq(sessions.id, hashToken(token)))
      .get();
    if (!row || row.revokedAt !== null || row.expiresAt <= now) return null;
    if (now - row.lastSeenAt >= SEEN_EVERY_MS) this.db.update(sessions).set({ lastSeenAt: now }).where(eq(sessions.id, row.id)).run();
    return { id: row.id, accountId: row.accountId, expiresAt: row.expiresAt, accountDisabledAt: row.accountDisabledAt };
  }

  /** Ends the session of this token (logout); a token that opens nothing is no error. */
  revoke(token: string): void {
    this.db.update(sessions).set({ revokedAt: this.now() }).where(and(eq(sessions.id, hashToken(token)), isNull(sessions.revokedAt))).run();
  }

  /** Ends every live session of the account but `keep` (a session id); returns how many ended. */
  revokeAll(accountId: number, keep: string | null = null): number {
    const live = and(eq(sessions.accountId, accountId), isNull(sessions.revokedAt), keep === null ? undefined : ne(sessions.id, keep));
    return this.db.update(sessions).set({ revokedAt: this.now() }).where(live).returning({ id: sessions.id }).all().length;
  }
}
