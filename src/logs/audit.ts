import { desc } from "drizzle-orm";
import type { Db } from "../store/engine/sqlite/client.ts";
import { auditLog } from "../store/schema/sqlite.ts";
import type { Awaitable } from "../core/awaitable.ts";

// The audit_log table's one owner: who did what to whom, for the admin actions that move no money
// (money moves are ledger rows, which say it themselves).

export interface AuditEntry {
  /** The admin account that acted; null for the operator's CLI. */
  actorAccountId: number | null;
  /** What was done, a fixed word: account_disabled, product_paused, … */
  action: string;
  targetAccountId?: number | null;
  /** A note in words; never a key, a password or a prompt. */
  detail?: string | null;
}

export type AuditRecord = typeof auditLog.$inferSelect;

/** The audit log, whichever database holds it: `Audit` on SQLite, `PgAudit` on PostgreSQL (pg-audit.ts). */
export interface AuditTrail {
  record(entry: AuditEntry, now?: number): Awaitable<void>;
  /** The newest entries first. */
  recent(limit?: number): Awaitable<AuditRecord[]>;
}

/** The row of an entry as both engines write it. */
export const auditRow = (entry: AuditEntry, now: number) => ({
  actorAccountId: entry.actorAccountId,
  action: entry.action,
  targetAccountId: entry.targetAccountId ?? null,
  detail: entry.detail ?? null,
  createdAt: now,
});

export class Audit implements AuditTrail {
  constructor(private readonly db: Db) {}
  record = (entry: AuditEntry, now?: number) => recordAudit(this.db, entry, now);
  recent = (limit?: number) => recentAudit(this.db, limit);
}

export function recordAudit(db: Db, entry: AuditEntry, now = Date.now()): void {
  db.insert(auditLog).values(auditRow(entry, now)).run();
}

/** The newest entries first. */
export function recentAudit(db: Db, limit = 100): AuditRecord[] {
  return db.select().from(auditLog).orderBy(desc(auditLog.id)).limit(limit).all();
}
