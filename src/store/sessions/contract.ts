import { randomBytes } from "node:crypto";

// The dashboard's sessions: opened at login, found per /api/ request, revoked at logout. Cold: async
// on both engines. tests/auth/sessions.test.ts holds both to the same behaviour.

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

/** The dashboard's sessions, whichever database holds them. */
export interface SessionStore {
  open(accountId: number): Promise<{ token: string; expiresAt: number }>;
  /** The live session of a cookie's token; null when unknown, revoked or expired. */
  find(token: string): Promise<SessionView | null>;
  /** Ends the session of this token (logout); a token that opens nothing is no error. */
  revoke(token: string): Promise<void>;
  revokeAll(accountId: number, keep?: string | null): Promise<number>;
}
