import { and, count, desc, eq, gt, inArray, isNotNull, isNull, or } from "drizzle-orm";
import type { GroupCommit } from "../commits/sqlite.ts";
import type { Db } from "../engine/sqlite/client.ts";
import { codeBatches, redemptionCodes } from "../schema/sqlite.ts";
import { codeInvalid, redemptionEntry, refusalOf, type BatchUse, type Claim, type CodeBatch, type CodeStore, type InviteClaim, type NewBatch, type Redeemed } from "./contract.ts";

/** The ledger's credit on SQLite, synchronous inside the caller's write transaction. */
interface SqliteCredit {
  credit(accountId: number, amountNano: number, kind: "redemption", note: string, externalRef: string): boolean;
}

/** Rows per INSERT: two parameters each, far below SQLite's limit of 32 766. */
const CHUNK = 500;

/** The redemption codes on SQLite, the embedded default. */
export class Codes implements CodeStore {
  constructor(
    private readonly db: Db,
    private readonly ledger: SqliteCredit,
    /** The serving process's group commit, which a redemption joins; the CLI has none. */
    private readonly commits: GroupCommit | null = null,
  ) {}

  async createBatch(batch: NewBatch, hashes: string[], now = Date.now()): Promise<CodeBatch> {
    return this.db.$client
      .transaction(() => {
        const row = this.db.insert(codeBatches).values({ ...batch, count: hashes.length, createdAt: now }).returning().get();
        for (let i = 0; i < hashes.length; i += CHUNK) {
          this.db.insert(redemptionCodes).values(hashes.slice(i, i + CHUNK).map((codeHash) => ({ codeHash, batchId: row.id }))).run();
        }
        return row;
      })
      .immediate();
  }

  async batches(limit = 100): Promise<BatchUse[]> {
    const rows = this.db.select().from(codeBatches).orderBy(desc(codeBatches.id)).limit(limit).all();
    const used = this.db
      .select({ batchId: redemptionCodes.batchId, n: count() })
      .from(redemptionCodes)
      .where(and(inArray(redemptionCodes.batchId, rows.map((r) => r.id)), isNotNull(redemptionCodes.redeemedAt)))
      .groupBy(redemptionCodes.batchId)
      .all();
    const byBatch = new Map(used.map((u) => [u.batchId, u.n]));
    return rows.map((r) => ({ ...r, used: byBatch.get(r.id) ?? 0 }));
  }

  /** In the group commit's batch (or a transaction of its own in the CLI): the code marked, then its entry. */
  redeem(hash: string, accountId: number, now = Date.now()): Promise<Redeemed> {
    const once = (): Redeemed => {
      const { batchId, claim } = this.claim(hash, accountId, now);
      // The reference is unique in the ledger: a code credited already (a row marked back by hand) credits nothing.
      if (!this.ledger.credit(accountId, claim.amountNano, "redemption", claim.note, claim.externalRef)) throw codeInvalid();
      return { batchId, amountNano: claim.amountNano };
    };
    return this.commits ? this.commits.run(once) : Promise.resolve(this.db.$client.transaction(once).immediate());
  }

  inviteClaim(hash: string, now = Date.now()): InviteClaim {
    return (accountId) => this.claim(hash, accountId, now).claim;
  }

  /**
   * Marks the code redeemed by the account if it is unused and its batch unexpired, inside the
   * caller's write transaction (SQLite's one write lock: a second redemption waits and then finds it used).
   */
  private claim(hash: string, accountId: number, now: number): { batchId: number; claim: Claim } {
    const live = this.db.select({ id: codeBatches.id }).from(codeBatches).where(or(isNull(codeBatches.expiresAt), gt(codeBatches.expiresAt, now)));
    const [marked] = this.db
      .update(redemptionCodes)
      .set({ redeemedByAccountId: accountId, redeemedAt: now })
      .where(and(eq(redemptionCodes.codeHash, hash), isNull(redemptionCodes.redeemedAt), inArray(redemptionCodes.batchId, live)))
      .returning({ batchId: redemptionCodes.batchId })
      .all();
    if (!marked) {
      const found = this.db
        .select({ redeemedAt: redemptionCodes.redeemedAt, expiresAt: codeBatches.expiresAt })
        .from(redemptionCodes)
        .innerJoin(codeBatches, eq(codeBatches.id, redemptionCodes.batchId))
        .where(eq(redemptionCodes.codeHash, hash))
        .get();
      throw refusalOf(found, now);
    }
    const { amountNano } = this.db.select({ amountNano: codeBatches.amountNano }).from(codeBatches).where(eq(codeBatches.id, marked.batchId)).get()!;
    return { batchId: marked.batchId, claim: redemptionEntry(hash, marked.batchId, amountNano) };
  }
}
