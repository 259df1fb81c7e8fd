import { sql } from "drizzle-orm";
import type { Db } from "../engine/sqlite/client.ts";
import { requestLogs } from "../schema/sqlite.ts";
import { SPEND_GROUPS, spendColumns, spendOrder, spendWhere } from "./summary.ts";
import type { SpendFilter, SpendReports, SpendRow } from "./contract.ts";

// The overview's spend on SQLite: the query of summary.ts with this engine's UTC day.

export class SqliteSpend implements SpendReports {
  constructor(private readonly db: Db) {}

  async spend(filter: SpendFilter): Promise<SpendRow[]> {
    const day = sql<string>`date(${requestLogs.createdAt} / 1000, 'unixepoch')`;
    const rows = await this.db.select(spendColumns(requestLogs, day)).from(requestLogs).where(spendWhere(filter, requestLogs)).groupBy(SPEND_GROUPS);
    return spendOrder(rows);
  }
}
