import type { Statement } from "bun:sqlite";
import { eq, lt } from "drizzle-orm";
import { changedRows, type Db } from "../engine/sqlite/client.ts";
import { idempotencyRecords } from "../schema/sqlite.ts";
import { IDEMPOTENCY_TTL_MS, WAIT_FOR_FIRST_MS, type Begin, type IdempotencyStore, type StoredAnswer } from "./contract.ts";
import { answerOf, claimOrWait, isExpired, replayable, type ClaimRow } from "./claims.ts";

/**
 * Idempotency-Key = account + request fingerprint + stored answer (Stripe's model). The in_flight row is
 * claimed in one transaction, so a concurrent duplicate waits for the first instead of running twice.
 * begin and finish run on every request that sends the header, so they keep prepared statements;
 * prune and abandonInFlight run once a day or at start, through the query builder.
 */
export class Idempotency implements IdempotencyStore {
  private readonly s: Record<string, Statement>;
  private readonly waitForFirstMs: number;

  constructor(
    private readonly db: Db,
    opts: { waitForFirstMs?: number } = {},
  ) {
    this.waitForFirstMs = opts.waitForFirstMs ?? WAIT_FOR_FIRST_MS;
    const q = (sql: string) => db.$client.prepare(sql);
    this.s = {
      get: q("SELECT body_sha256, state, status, content_type, response_body, created_at FROM idempotency_records WHERE key_id = ? AND idempotency_key = ?"),
      del: q("DELETE FROM idempotency_records WHERE key_id = ? AND idempotency_key = ?"),
      claim: q("INSERT INTO idempotency_records (key_id, idempotency_key, body_sha256, state, request_id, created_at) VALUES (?, ?, ?, 'in_flight', ?, ?)"),
      done: q("UPDATE idempotency_records SET state = 'done', status = ?, content_type = ?, response_body = ? WHERE key_id = ? AND idempotency_key = ?"),
    };
  }

  begin(accountId: number, idemKey: string, bodySha: string, requestId: string): Promise<Begin> {
    return claimOrWait(idemKey, this.waitForFirstMs, () => this.tryClaim(accountId, idemKey, bodySha, requestId));
  }

  private tryClaim(accountId: number, idemKey: string, bodySha: string, requestId: string): Begin | "in_flight" {
    return this.db.$client
      .transaction((): Begin | "in_flight" => {
        const row = this.s.get!.get(accountId, idemKey) as ClaimRow | null;
        if (row && isExpired(row)) this.s.del!.run(accountId, idemKey);
        else if (row) return answerOf(row, bodySha);
        this.s.claim!.run(accountId, idemKey, bodySha, requestId, Date.now());
        return { kind: "fresh" };
      })
      .immediate();
  }

  finish(accountId: number, idemKey: string, answer: StoredAnswer | null): void {
    if (replayable(answer)) this.s.done!.run(answer.status, answer.contentType, answer.body, accountId, idemKey);
    else this.s.del!.run(accountId, idemKey);
  }

  prune(now = Date.now()): number {
    return changedRows(this.db.delete(idempotencyRecords).where(lt(idempotencyRecords.createdAt, now - IDEMPOTENCY_TTL_MS)).run());
  }

  /** At start: claims of a process that died will never finish (one serving process per SQLite file). */
  abandonInFlight(): number {
    return changedRows(this.db.delete(idempotencyRecords).where(eq(idempotencyRecords.state, "in_flight")).run());
  }
}
