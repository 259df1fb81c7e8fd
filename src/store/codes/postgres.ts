import type { SQL } from "bun";
import { and, count, desc, eq, inArray, isNotNull } from "drizzle-orm";
import type { PgDb } from "../engine/postgres/client.ts";
import { codeBatches, redemptionCodes } from "../schema/postgres.ts";
import { codeInvalid, redemptionEntry, refusalOf, type BatchUse, type Claim, type CodeBatch, type CodeStore, type InviteClaim, type NewBatch, type Redeemed } from "./contract.ts";

/** The ledger's credit on PostgreSQL, joining the caller's transaction `tx`. */
interface PgCredit {
  credit(accountId: number, amountNano: number, kind: "redemption", note: string, externalRef: string, tx: SQL): Promise<boolean>;
}

/** Rows per INSERT: two parameters each, far below PostgreSQL's limit of 65 535. */
const CHUNK = 500;

/** The redemption codes on PostgreSQL (`[database] url`), the shared engine. */
export class PgCodes implements CodeStore {
  constructor(
    private readonly db: PgDb,
    private readonly ledger: PgCredit,
  ) {}

  async createBatch(batch: NewBatch, hashes: string[], now = Date.now()): Promise<CodeBatch> {
    return this.db.transaction(async (tx) => {
      const [row] = await tx.insert(codeBatches).values({ ...batch, count: hashes.length, createdAt: now }).returning();
      for (let i = 0; i < hashes.length; i += CHUNK) {
        await tx.insert(redemptionCodes).values(hashes.slice(i, i + CHUNK).map((codeHash) => ({ codeHash, batchId: row!.id })));
      }
      return row!;
    });
  }

  async batches(limit = 100): Promise<BatchUse[]> {
    const rows = await this.db.select().from(codeBatches).orderBy(desc(codeBatches.id)).limit(limit);
    if (rows.length === 0) return [];
    const used = await this.db
      .select({ batchId: redemptionCodes.batchId, n: count() })
      .from(redemptionCodes)
      .where(and(inArray(redemptionCodes.batchId, rows.map((r) => r.id)), isNotNull(redemptionCodes.redeemedAt)))
      .groupBy(redemptionCodes.batchId);
    const byBatch = new Map(used.map((u) => [u.batchId, u.n]));
    return rows.map((r) => ({ ...r, used: byBatch.get(r.id) ?? 0 }));
  }

  /**
   * One transaction: the code marked, then the ledger's credit joining it. The row's lock makes a
   * second redemption, on this instance or another, wait for this one and then find the code used.
   * Raw SQL: the ledger writes through Bun's SQL transaction, which Drizzle's query builder cannot join.
   */
  async redeem(hash: string, accountId: number, now = Date.now()): Promise<Redeemed> {
    return this.db.$client.begin(async (tx) => {
      const { batchId, claim } = await this.claim(tx, hash, accountId, now);
      if (!(await this.ledger.credit(accountId, claim.amountNano, "redemption", claim.note, claim.externalRef, tx))) throw codeInvalid();
      return { batchId, amountNano: claim.amountNano };
    });
  }

  inviteClaim(hash: string, now = Date.now()): InviteClaim {
    return async (accountId, tx) => (await this.claim(tx as SQL, hash, accountId, now)).claim;
  }

  private async claim(tx: SQL, hash: string, accountId: number, now: number): Promise<{ batchId: number; claim: Claim }> {
    const [marked] = await tx`UPDATE redemption_codes c SET redeemed_by_account_id = ${accountId}, redeemed_at = ${now}::bigint
      FROM code_batches b
      WHERE c.code_hash = ${hash} AND c.redeemed_at IS NULL AND b.id = c.batch_id AND (b.expires_at IS NULL OR b.expires_at > ${now}::bigint)
      RETURNING c.batch_id, b.amount_nano`;
    if (!marked) {
      const [found] = await tx`SELECT c.redeemed_at, b.expires_at FROM redemption_codes c JOIN code_batches b ON b.id = c.batch_id WHERE c.code_hash = ${hash}`;
      throw refusalOf(found && { redeemedAt: found.redeemed_at === null ? null : Number(found.redeemed_at), expiresAt: found.expires_at === null ? null : Number(found.expires_at) }, now);
    }
    const batchId = Number(marked.batch_id);
    return { batchId, claim: redemptionEntry(hash, batchId, Number(marked.amount_nano)) };
  }
}
