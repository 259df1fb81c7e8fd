import { GatewayError } from "../../core/errors.ts";
import { IDEMPOTENCY_TTL_MS, type Begin, type StoredAnswer } from "./contract.ts";

// What both engines' claims share: how a found claim answers, and begin's wait for the first request.

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
export async function claimOrWait(idemKey: string, waitMs: number, tryClaim: () => Begin | "in_flight" | Promise<Begin | "in_flight">): Promise<Begin> {
  if (clientPart(idemKey).length > 255) throw new GatewayError("invalid_request", "Idempotency-Key must be at most 255 characters.");
  const deadline = Date.now() + waitMs;
  for (;;) {
    const claimed = tryClaim();
    // SQLite answers at once: no turn of the event loop for it (the branch stays here, in the store).
    const r = claimed instanceof Promise ? await claimed : claimed;
    if (r !== "in_flight") return r;
    if (Date.now() > deadline) {
      throw new GatewayError("idempotency_conflict", "A request with this Idempotency-Key is still in progress. Retry later.");
    }
    await Bun.sleep(25);
  }
}
