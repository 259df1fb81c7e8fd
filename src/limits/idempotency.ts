import type { Statement } from "bun:sqlite";
import { eq, lt } from "drizzle-orm";
import { changedRows, type Db } from "../db/client.ts";
import { idempotencyRecords } from "../db/schema.ts";
import { GatewayError } from "../core/errors.ts";

export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;
const WAIT_FOR_FIRST_MS = 30_000;

export interface StoredAnswer {
  status: number;
  contentType: string;
  body: string;
}

export type Begin = { kind: "fresh" } | { kind: "replay"; answer: StoredAnswer };

/**
 * The Idempotency-Key as stored: prefixed by the endpoint it was sent to, so that each endpoint is its
 * own namespace. Unscoped, the same key and body sent to /v1/chat/completions and then /v1/messages
 * replayed the Chat answer to the Messages client. A header value holds no newline, so the split is
 * unambiguous; a trailing slash names the same endpoint.
 */
export function scopedIdempotencyKey(pathname: string, header: string | null): string | null {
  return header ? `${pathname.replace(/(.)\/$/, "$1")}\n${header}` : null;
}

/** The client's part of a scoped key. */
const clientPart = (stored: string) => stored.slice(stored.indexOf("\n") + 1);

/**
 * Idempotency-Key = key + request fingerprint + stored answer (Stripe's model). The in_flight row is
 * claimed in one transaction, so a concurrent duplicate waits for the first instead of running twice.
 * begin and finish run on every request that sends the header, so they keep prepared statements;
 * prune and abandonInFlight run once a day or at start, through the query builder.
 */
export class Idempotency {
  private readonly s: Record<string, Statement>;

  constructor(private readonly db: Db) {
    const q = (sql: string) => db.$client.prepare(sql);
    this.s = {
      get: q("SELECT body_sha256, state, status, content_type, response_body, created_at FROM idempotency_records WHERE key_id = ? AND idempotency_key = ?"),
      del: q("DELETE FROM idempotency_records WHERE key_id = ? AND idempotency_key = ?"),
      claim: q("INSERT INTO idempotency_records (key_id, idempotency_key, body_sha256, state, request_id, created_at) VALUES (?, ?, ?, 'in_flight', ?, ?)"),
      done: q("UPDATE idempotency_records SET state = 'done', status = ?, content_type = ?, response_body = ? WHERE key_id = ? AND idempotency_key = ?"),
    };
  }

  async begin(keyId: number, idemKey: string, bodySha: string, requestId: string): Promise<Begin> {
    if (clientPart(idemKey).length > 255) throw new GatewayError("invalid_request", "Idempotency-Key must be at most 255 characters.");
    const deadline = Date.now() + WAIT_FOR_FIRST_MS;
    for (;;) {
      const r = this.tryClaim(keyId, idemKey, bodySha, requestId);
      if (r !== "in_flight") return r;
      if (Date.now() > deadline) {
        throw new GatewayError("idempotency_conflict", "A request with this Idempotency-Key is still in progress. Retry later.");
      }
      await Bun.sleep(25);
    }
  }

  private tryClaim(keyId: number, idemKey: string, bodySha: string, requestId: string): Begin | "in_flight" {
    return this.db.$client
      .transaction((): Begin | "in_flight" => {
        const row = this.s.get!.get(keyId, idemKey) as
          | { body_sha256: string; state: string; status: number; content_type: string; response_body: string; created_at: number }
          | null;
        if (row && row.created_at < Date.now() - IDEMPOTENCY_TTL_MS) this.s.del!.run(keyId, idemKey);
        else if (row) {
          if (row.body_sha256 !== bodySha) {
            throw new GatewayError(
              "idempotency_conflict",
              "This Idempotency-Key was already used with a different request body. Use a new key for a new request.",
              { headers: { "x-should-retry": "false" } },
            );
          }
          if (row.state === "in_flight") return "in_flight";
          return { kind: "replay", answer: { status: row.status, contentType: row.content_type, body: row.response_body } };
        }
        this.s.claim!.run(keyId, idemKey, bodySha, requestId, Date.now());
        return { kind: "fresh" };
      })
      .immediate();
  }

  /** Stores a successful answer for replay; a failed request frees the key so a retry runs again. */
  finish(keyId: number, idemKey: string, answer: StoredAnswer | null): void {
    if (answer && answer.status >= 200 && answer.status < 300) this.s.done!.run(answer.status, answer.contentType, answer.body, keyId, idemKey);
    else this.s.del!.run(keyId, idemKey);
  }

  prune(now = Date.now()): number {
    return changedRows(this.db.delete(idempotencyRecords).where(lt(idempotencyRecords.createdAt, now - IDEMPOTENCY_TTL_MS)).run());
  }

  /** At start: claims of a process that died will never finish. */
  abandonInFlight(): number {
    return changedRows(this.db.delete(idempotencyRecords).where(eq(idempotencyRecords.state, "in_flight")).run());
  }
}
