import { desc } from "drizzle-orm";
import type { PgDb } from "../engine/postgres/client.ts";
import { auditLog } from "../schema/postgres.ts";
import { auditRow, type AuditEntry, type AuditRecord, type AuditTrail } from "./contract.ts";

// The audit log on PostgreSQL (`[database] url`), the shared engine.
export class PgAudit implements AuditTrail {
  constructor(private readonly db: PgDb) {}

  async record(entry: AuditEntry, now = Date.now()): Promise<void> {
    await this.db.insert(auditLog).values(auditRow(entry, now));
  }

  recent(limit = 100): Promise<AuditRecord[]> {
    return Promise.resolve(this.db.select().from(auditLog).orderBy(desc(auditLog.id)).limit(limit));
  }
}
