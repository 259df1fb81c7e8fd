import type { auditLog } from "../schema/sqlite.ts";

// The audit_log table's one owner: who did what to whom, for the admin actions that move no money
// (money moves are ledger rows, which say it themselves). tests/logs/audit.test.ts runs both engines.

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

/** The audit log, whichever database holds it. Cold: async on both engines. */
export interface AuditTrail {
  record(entry: AuditEntry, now?: number): Promise<void>;
  /** The newest entries first. */
  recent(limit?: number): Promise<AuditRecord[]>;
}

/** The row of an entry as both engines write it. */
export const auditRow = (entry: AuditEntry, now: number) => ({
  actorAccountId: entry.actorAccountId,
  action: entry.action,
  targetAccountId: entry.targetAccountId ?? null,
  detail: entry.detail ?? null,
  createdAt: now,
});
