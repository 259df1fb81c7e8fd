import { desc } from "drizzle-orm";
import type { Db } from "../engine/sqlite/client.ts";
import { auditLog } from "../schema/sqlite.ts";
import { auditRow, type AuditEntry, type AuditRecord, type AuditTrail } from "./contract.ts";

// The audit log on SQLite, the embedded default.
export class Audit implements AuditTrail {
  constructor(private readonly db: Db) {}

  async record(entry: AuditEntry, now = Date.now()): Promise<void> {
    await this.db.insert(auditLog).values(auditRow(entry, now));
  }

  recent(limit = 100): Promise<AuditRecord[]> {
    return Promise.resolve(this.db.select().from(auditLog).orderBy(desc(auditLog.id)).limit(limit));
  }
}
