import { desc } from "drizzle-orm";
import type { Either } from "../engine/either.ts";
import { auditRow, type AuditEntry, type AuditRecord, type AuditTrail } from "./contract.ts";

/** The audit log, written once for both engines. */
export class AuditOn implements AuditTrail {
  constructor(private readonly on: Either) {}

  async record(entry: AuditEntry, now = Date.now()): Promise<void> {
    await this.on.db.insert(this.on.t.auditLog).values(auditRow(entry, now));
  }

  recent(limit = 100): Promise<AuditRecord[]> {
    const { db, t } = this.on;
    return Promise.resolve(db.select().from(t.auditLog).orderBy(desc(t.auditLog.id)).limit(limit));
  }
}
