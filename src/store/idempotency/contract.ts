// The idempotency_records table's owner: Idempotency-Key = account + request fingerprint + stored
// answer (Stripe's model). tests/limits/idempotency-contract.test.ts runs the same cases on both engines.

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

/**
 * The idempotency records as the pipeline and the server use them. A record belongs to an account, whichever of
 * its keys sent the request (docs/api.md#rules); the account's id is kept in the table's
 * `key_id` column (docs/database.md), which needed no migration.
 */
export interface IdempotencyStore {
  begin(accountId: number, idemKey: string, bodySha: string, requestId: string): Promise<Begin>;
  /** Stores a replayable answer (a success, or a kept failure); any other frees the key so a retry runs again. */
  /** Synchronous on SQLite: one prepared statement at the end of every request that sent the header. */
  finish(accountId: number, idemKey: string, answer: StoredAnswer | null): void | Promise<void>;
  /** Deletes the records older than a day; how many. */
  /** Daily; synchronous on SQLite, whose suite reads the count as a value. */
  prune(now?: number): number | Promise<number>;
  /** At start: this process's earlier claims, which will never finish; how many. */
  abandonInFlight(): number | Promise<number>;
}
