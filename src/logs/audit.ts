import { desc } from "drizzle-orm";
import type { Db } from "../db/client.ts";
import { auditLog } from "../db/schema.ts";

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

export function recordAudit(db: Db, entry: AuditEntry, now = Date.now()): void {
  db.insert(auditLog)
    .values({ actorAccountId: entry.actorAccountId, action: entry.action, targetAccountId: entry.targetAccountId ?? null, detail: entry.detail ?? null, createdAt: now })
    .run();
}

/** The newest entries first. */
export function recentAudit(db: Db, limit = 100) {
  return db.select().from(auditLog).orderBy(desc(auditLog.id)).limit(limit).all();
}
