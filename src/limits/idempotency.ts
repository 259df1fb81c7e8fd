import type { Statement } from "bun:sqlite";
import { eq, lt } from "drizzle-orm";
import { changedRows, type Db } from "../store/engine/sqlite/client.ts";
import { idempotencyRecords } from "../store/schema/sqlite.ts";
import { GatewayError } from "../core/errors.ts";
import type { Awaitable } from "../core/awaitable.ts";

export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;
/** How long a duplicate waits for the first request with its key before answering 409. */
export const WAIT_FOR_FIRST_MS = 30_000;

export interface StoredAnswer {
  status: number;
  contentType: string;
  body: string;
  /** An error answer that stays for replay all the same (GatewayError.kept: an ambiguous media result). */
  kept?: boolean;
}

export type Begin = { kind: "fresh" } | { kind: "replay"; answer: StoredAnswer };

/**
 * The Idempotency-Key as stored: prefixed by the endpoint it was sent to, so that each endpoint is its
 * own namespace. Unscoped, the same key and body sent to /v1/chat/completions and then /v1/messages
 * replayed the Chat answer to the Messages client. A header value holds no newline, so the split is
 * unambiguous; a trailing slash names the same endpoint.
 *
 * The leading `a` marks a record owned by an account (the stores' first argument). Records were
 * once owned by a key, in the same column: the mark keeps such a record, written before the change,
 * from ever answering an account whose id happens to equal that key's. They expire within a day.
 */
export function scopedIdempotencyKey(pathname: string, header: string | null): string | null {
  return header ? `a\n${pathname.replace(/(.)\/$/, "$1")}\n${header}` : null;
}

/** The client's part of a scoped key. */
const clientPart = (stored: string) => stored.slice(stored.lastIndexOf("\n") + 1);

/** A stored claim as begin reads it. */
export interface ClaimRow {
  body_sha256: string;
  state: string;
  status: number;
  content_type: string;
  response_body: string;
  created_at: number;
}

export const isExpired = (row: { created_at: number }, now = Date.now()): boolean => row.created_at < now - IDEMPOTENCY_TTL_MS;

/** What a claim someone else holds answers: a replay, a wait while it runs, or a conflict when the body differs. */
export function answerOf(row: ClaimRow, bodySha: string): Begin | "in_flight" {
  if (row.body_sha256 !== bodySha) {
    throw new GatewayError("idempotency_conflict", "This Idempotency-Key was already used with a different request body. Use a new key for a new request.");
  }
  if (row.state === "in_flight") return "in_flight";
  return { kind: "replay", answer: { status: row.status, contentType: row.content_type, body: row.response_body } };
}

/**
 * Does a finished request's answer stay for replay? A success does; a failed request frees the key so
 * a retry runs again, except a failure that must not run twice (`kept`: the image provider may have
 * generated it), which a retry with the key gets replayed.
 */
export const replayable = (answer: StoredAnswer | null): answer is StoredAnswer =>
  answer !== null && (answer.kept === true || (answer.status >= 200 && answer.status < 300));

/** begin's loop on either engine: claims, or waits while the first request with the key runs, up to `waitMs`. */
export async function claimOrWait(idemKey: string, waitMs: number, tryClaim: () => Awaitable<Begin | "in_flight">): Promise<Begin> {
  if (clientPart(idemKey).length > 255) throw new GatewayError("invalid_request", "Idempotency-Key must be at most 255 characters.");
  const deadline = Date.now() + waitMs;
  for (;;) {
    const claimed = tryClaim();
    // SQLite answers at once: no turn of the event loop for it.
    const r = claimed instanceof Promise ? await claimed : claimed;
    if (r !== "in_flight") return r;
    if (Date.now() > deadline) {
      throw new GatewayError("idempotency_conflict", "A request with this Idempotency-Key is still in progress. Retry later.");
    }
    await Bun.sleep(25);
  }
}

/**
 * The idempotency records as the pipeline and the server use them: `Idempotency` on SQLite,
 * `PgIdempotency` (pg-idempotency.ts) on PostgreSQL. A record belongs to an account, whichever of
 * its keys sent the request (docs/api.md#rules); the account's id is kept in the table's
 * `key_id` column (docs/database.md), which needed no migration.
 */
export interface IdempotencyStore {
  begin(accountId: number, idemKey: string, bodySha: string, requestId: string): Promise<Begin>;
  /** Stores a replayable answer (a success, or a kept failure); any other frees the key so a retry runs again. */
  finish(accountId: number, idemKey: string, answer: StoredAnswer | null): Awaitable<void>;
  /** Deletes the records older than a day; how many. */
  prune(now?: number): Awaitable<number>;
  /** At start: this process's earlier claims, which will never finish; how many. */
  abandonInFlight(): Awaitable<number>;
}

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
