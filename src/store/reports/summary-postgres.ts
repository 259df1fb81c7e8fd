import { sql } from "drizzle-orm";
import type { PgDb } from "../engine/postgres/client.ts";
import { requestLogs } from "../schema/postgres.ts";
import { SPEND_GROUPS, spendColumns, spendOrder, spendWhere } from "./summary.ts";
import type { SpendFilter, SpendReports, SpendRow } from "./contract.ts";

// The overview's spend on PostgreSQL: the query of summary.ts with this engine's UTC day.

export class PgSpend implements SpendReports {
  constructor(private readonly db: PgDb) {}

  async spend(filter: SpendFilter): Promise<SpendRow[]> {
    const day = sql<string>`to_char(to_timestamp(${requestLogs.createdAt} / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD')`;
    const rows = await this.db.select(spendColumns(requestLogs, day)).from(requestLogs).where(spendWhere(filter, requestLogs)).groupBy(SPEND_GROUPS);
    return spendOrder(rows);
  }
}
