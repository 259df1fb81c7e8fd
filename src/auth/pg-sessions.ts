import type { PgDb } from "../store/engine/postgres/client.ts";
import { hashToken, liveSession, newToken, type SessionRow, type SessionStore, type SessionView } from "./sessions.ts";

// The dashboard's sessions on PostgreSQL (`[database] url`), as sessions.ts keeps them on SQLite:
// any instance may open, find or end a session, since the browser's next call may reach another.

type Row = Record<string, string | null>;
const num = (v: string | null | undefined) => (v == null ? null : Number(v));

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
    await this.db.$client`INSERT INTO sessions (id, account_id, created_at, expires_at, last_seen_at)
      VALUES (${hashToken(token)}, ${accountId}, ${now}::bigint, ${expiresAt}::bigint, ${now}::bigint)`;
    return { token, expiresAt };
  }

  async find(token: string): Promise<SessionView | null> {
    const now = this.now();
    const [r] = (await this.db.$client`SELECT s.id, s.account_id::text, s.expires_at::text, s.last_seen_at::text, s.revoked_at::text, a.disabled_at::text
      FROM sessions s JOIN accounts a ON a.id = s.account_id WHERE s.id = ${hashToken(token)}`) as Row[];
    const row: SessionRow | undefined = r && {
      id: r.id!,
      accountId: Number(r.account_id),
      expiresAt: Number(r.expires_at),
      lastSeenAt: Number(r.last_seen_at),
      revokedAt: num(r.revoked_at),
      accountDisabledAt: num(r.disabled_at),
    };
    const live = liveSession(row, now);
    // Two instances touching at once both write the same minute: either is right.
    if (live?.touch) await this.db.$client`UPDATE sessions SET last_seen_at = ${now}::bigint WHERE id = ${live.view.id}`;
    return live?.view ?? null;
  }

  async revoke(token: string): Promise<void> {
    await this.db.$client`UPDATE sessions SET revoked_at = ${this.now()}::bigint WHERE id = ${hashToken(token)} AND revoked_at IS NULL`;
  }

  async revokeAll(accountId: number, keep: string | null = null): Promise<number> {
    const ended = await this.db.$client`UPDATE sessions SET revoked_at = ${this.now()}::bigint
      WHERE account_id = ${accountId} AND revoked_at IS NULL AND (${keep}::text IS NULL OR id <> ${keep}::text) RETURNING id`;
    return ended.length;
  }
}
