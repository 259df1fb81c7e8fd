import type { SQL } from "bun";
import type { PgDb } from "../engine/postgres/client.ts";
import { answerOf, claimOrWait, isExpired, replayable, type ClaimRow } from "./claims.ts";
import { IDEMPOTENCY_TTL_MS, type Begin, type IdempotencyStore, type StoredAnswer, WAIT_FOR_FIRST_MS } from "./contract.ts";

// Idempotency on PostgreSQL (`[database] url`), shared by several instances: a duplicate may reach
// another instance while the first runs, so the claim is a row inserted before the upstream call
// (ON CONFLICT DO NOTHING: exactly one inserter wins), and whoever did not insert reads the row and
// answers as SQLite does (replay, conflict, or wait while it is in flight).
//
// Each claim carries its instance's id. A claim counts as live while its instance has a row in
// `instances` (the ledger's heartbeat, store/ledger/postgres-lease.ts): the ledger deletes a silent instance's row when it
// releases its holds, and from then on a duplicate waiting on one of its claims releases that claim
// and runs. So a crashed instance's claims go with its holds, by the same timeout, with no call
// between the two owners; claims without an instance (copied from SQLite by migrate-db) count as
// a dead process's, as SQLite's start would treat them.

/** The claim's row as begin reads it, beside whether this statement inserted it. `key_id` holds the account's id (contract.ts). */
const CLAIM = `WITH ins AS (
    INSERT INTO idempotency_records (key_id, idempotency_key, body_sha256, state, request_id, created_at, instance_id)
    VALUES ($1, $2, $3, 'in_flight', $4, $5, $6) ON CONFLICT (key_id, idempotency_key) DO NOTHING RETURNING 1)
  SELECT EXISTS (SELECT 1 FROM ins) AS claimed, r.body_sha256, r.state, r.status, r.content_type, r.response_body, r.created_at
  FROM (SELECT 1) one LEFT JOIN idempotency_records r ON r.key_id = $1 AND r.idempotency_key = $2`;

/** In-flight claims whose instance is gone (no heartbeat row); `$1`/`$2` narrow it to one record (account, key) when given. */
const ORPHANS = `DELETE FROM idempotency_records r
  WHERE r.state = 'in_flight' AND ($1::bigint IS NULL OR (r.key_id = $1 AND r.idempotency_key = $2))
    AND (r.instance_id IS NULL OR NOT EXISTS (SELECT 1 FROM instances i WHERE i.id = r.instance_id))`;

export class PgIdempotency implements IdempotencyStore {
  private readonly sql: SQL;
  private readonly waitForFirstMs: number;

  constructor(
    db: PgDb,
    /** `[cluster] instance_id`: the claims this instance takes carry it. */
    readonly instanceId: string,
    opts: { waitForFirstMs?: number } = {},
  ) {
    this.sql = db.$client;
    this.waitForFirstMs = opts.waitForFirstMs ?? WAIT_FOR_FIRST_MS;
  }

  begin(accountId: number, idemKey: string, bodySha: string, requestId: string): Promise<Begin> {
    return claimOrWait(idemKey, this.waitForFirstMs, () => this.tryClaim(accountId, idemKey, bodySha, requestId));
  }

  private async tryClaim(accountId: number, idemKey: string, bodySha: string, requestId: string): Promise<Begin | "in_flight"> {
    for (;;) {
      const [r] = await this.sql.unsafe(CLAIM, [accountId, idemKey, bodySha, requestId, Date.now(), this.instanceId]);
      if (r.claimed) return { kind: "fresh" };
      // The holder committed after this statement's snapshot, or let go meanwhile: ask again.
      if (r.state == null) continue;
      const row: ClaimRow = { ...r, status: r.status == null ? r.status : Number(r.status), created_at: Number(r.created_at) };
      if (isExpired(row)) {
        await this.sql`DELETE FROM idempotency_records WHERE key_id = ${accountId} AND idempotency_key = ${idemKey} AND created_at = ${row.created_at}`;
        continue;
      }
      const answer = answerOf(row, bodySha);
      if (answer === "in_flight" && (await this.releaseOrphans(accountId, idemKey)) > 0) continue;
      return answer;
    }
  }

  /** Only this instance's claim: one released with this instance while silent may be another's by now. */
  async finish(accountId: number, idemKey: string, answer: StoredAnswer | null): Promise<void> {
    if (replayable(answer)) {
      await this.sql`UPDATE idempotency_records SET state = 'done', status = ${answer.status}, content_type = ${answer.contentType}, response_body = ${answer.body}
        WHERE key_id = ${accountId} AND idempotency_key = ${idemKey} AND instance_id = ${this.instanceId}`;
    } else {
      await this.sql`DELETE FROM idempotency_records WHERE key_id = ${accountId} AND idempotency_key = ${idemKey} AND instance_id = ${this.instanceId}`;
    }
  }

  async prune(now = Date.now()): Promise<number> {
    const r = await this.sql`DELETE FROM idempotency_records WHERE created_at < ${now - IDEMPOTENCY_TTL_MS}`;
    return r.count;
  }

  /** At start: this instance's earlier claims (a crash, then a restart under the same id); other instances' are theirs. */
  async abandonInFlight(): Promise<number> {
    const r = await this.sql`DELETE FROM idempotency_records WHERE state = 'in_flight' AND instance_id = ${this.instanceId}`;
    return r.count;
  }

  /** Releases the in-flight claims of instances that are gone (all of them, or one key's); how many. For a periodic sweep, or begin's wait. */
  async releaseOrphans(accountId: number | null = null, idemKey: string | null = null): Promise<number> {
    const r = await this.sql.unsafe(ORPHANS, [accountId, idemKey]);
    return r.count;
  }
}
