import { desc } from "drizzle-orm";
import type { PgDb } from "../store/engine/postgres/client.ts";
import { auditLog } from "../store/schema/postgres.ts";
import { auditRow, type AuditEntry, type AuditRecord, type AuditTrail } from "./audit.ts";

// The audit log on PostgreSQL (`[database] url`): the same rows as audit.ts writes on SQLite.
export class PgAudit implements AuditTrail {
  constructor(private readonly db: PgDb) {}

  async record(entry: AuditEntry, now = Date.now()): Promise<void> {
    await this.db.insert(auditLog).values(auditRow(entry, now));
  }

  recent(limit = 100): Promise<AuditRecord[]> {
    return this.db.select().from(auditLog).orderBy(desc(auditLog.id)).limit(limit);
  }
}
