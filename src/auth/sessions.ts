import { randomBytes } from "node:crypto";
import { and, eq, isNull, ne } from "drizzle-orm";
import type { Db } from "../store/engine/sqlite/client.ts";
import { accounts, sessions } from "../store/schema/sqlite.ts";
import type { Awaitable } from "../core/awaitable.ts";

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

export const hashToken = (token: string): string => Bun.SHA256.hash(token, "hex");

/** A new session's token: 256 bits from the system's CSPRNG; base64url fits a cookie value as it is. */
export const newToken = (): string => randomBytes(32).toString("base64url");

/** A session's row as both engines read it, with its account's disabled switch. */
export interface SessionRow extends SessionView {
  lastSeenAt: number;
  revokedAt: number | null;
}

/** What a found row means at `now`: the live session (and whether its last_seen_at is due), or null. */
export function liveSession(row: SessionRow | undefined, now: number): { view: SessionView; touch: boolean } | null {
  if (!row || row.revokedAt !== null || row.expiresAt <= now) return null;
  return { view: { id: row.id, accountId: row.accountId, expiresAt: row.expiresAt, accountDisabledAt: row.accountDisabledAt }, touch: now - row.lastSeenAt >= SEEN_EVERY_MS };
}

/**
 * The dashboard's sessions, whichever database holds them: `Sessions` on SQLite, `PgSessions` on
 * PostgreSQL (pg-sessions.ts). tests/auth/sessions.test.ts holds both to the same behaviour.
 */
export interface SessionStore {
  open(accountId: number): Awaitable<{ token: string; expiresAt: number }>;
  /** The live session of a cookie's token; null when unknown, revoked or expired. */
  find(token: string): Awaitable<SessionView | null>;
  /** Ends the session of this token (logout); a token that opens nothing is no error. */
  revoke(token: string): Awaitable<void>;
  revokeAll(accountId: number, keep?: string | null): Awaitable<number>;
}

/** The sessions table's one owner on SQLite: open at login, find per /api/ request, revoke at logout. */
export class Sessions implements SessionStore {
  constructor(
    private readonly db: Db,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  open(accountId: number): { token: string; expiresAt: number } {
    const token = newToken();
    const now = this.now();
    const expiresAt = now + this.ttlMs;
    this.db.insert(sessions).values({ id: hashToken(token), accountId, createdAt: now, expiresAt, lastSeenAt: now }).run();
    return { token, expiresAt };
  }

  find(token: string): SessionView | null {
    const now = this.now();
    const row = this.db
      .select({ id: sessions.id, accountId: sessions.accountId, expiresAt: sessions.expiresAt, lastSeenAt: sessions.lastSeenAt, revokedAt: sessions.revokedAt, accountDisabledAt: accounts.disabledAt })
      .from(sessions)
      .innerJoin(accounts, eq(accounts.id, sessions.accountId))
      .where(eq(sessions.id, hashToken(token)))
      .get();
    const live = liveSession(row, now);
    if (live?.touch) this.db.update(sessions).set({ lastSeenAt: now }).where(eq(sessions.id, row!.id)).run();
    return live?.view ?? null;
  }

  revoke(token: string): void {
    this.db.update(sessions).set({ revokedAt: this.now() }).where(and(eq(sessions.id, hashToken(token)), isNull(sessions.revokedAt))).run();
  }

  revokeAll(accountId: number, keep: string | null = null): number {
    const live = and(eq(sessions.accountId, accountId), isNull(sessions.revokedAt), keep === null ? undefined : ne(sessions.id, keep));
    return this.db.update(sessions).set({ revokedAt: this.now() }).where(live).returning({ id: sessions.id }).all().length;
  }
}
