import { events } from "../core/events.ts";
import type { Services } from "../services.ts";
import { scopedIdempotencyKey, type StoredAnswer } from "../store/idempotency/contract.ts";
import type { SessionCall } from "./session-guard.ts";

// Idempotency-Key over HTTP: the end of a claim, for /v1's pipeline and the dashboard's money
// routes; and those routes' claim (docs/dashboard.md#idempotent-credits-and-debits): the records,
// scopes and rules of /v1 (store/idempotency, docs/api.md#rules), owned by the session's account
// rather than an API key's. A script or a page that sends the same credit twice, with one key,
// moves the money once and reads the first answer again.

/** Ends an idempotency claim; a failed write (full disk) costs only the replay, so it is reported, not thrown. */
export function finishIdempotency(svc: Services, idem: { accountId: number; key: string }, requestId: string, answer: StoredAnswer | null): void {
  // Called at once (SQLite writes before the answer leaves), never awaited by the answer.
  void (async () => {
    try {
      await svc.idempotency.finish(idem.accountId, idem.key, answer);
    } catch (e) {
      events.writeFailed("idempotency", requestId, e);
    }
  })();
}

/**
 * `h` run at most once per (session account, path, Idempotency-Key) within 24 h: the same key with the
 * same JSON body replays the first success (`idempotent-replayed: true`) without running `h`; with
 * another body it is 409 `idempotency_conflict`; while the first still runs, a duplicate waits for it.
 * A refusal frees the key, so a corrected retry runs. Without the header, `h` runs as before.
 */
export function idempotent<A extends unknown[]>(h: (c: SessionCall, ...rest: A) => Promise<Response>) {
  return async (c: SessionCall, ...rest: A): Promise<Response> => {
    const idemKey = scopedIdempotencyKey(c.pathname, c.request.headers.get("idempotency-key"));
    if (!idemKey) return h(c, ...rest);
    const owner = c.session!.accountId;
    // The body as parsed (its spacing aside): the dashboard's bodies are small JSON objects.
    const sha = Bun.SHA256.hash(JSON.stringify(c.json), "hex");
    const begun = await c.svc.idempotency.begin(owner, idemKey, sha, c.requestId);
    if (begun.kind === "replay") {
      const { status, contentType, body } = begun.answer;
      return new Response(body, { status, headers: { "content-type": contentType, "idempotent-replayed": "true" } });
    }
    const idem = { accountId: owner, key: idemKey };
    let response: Response;
    try {
      response = await h(c, ...rest);
    } catch (e) {
      finishIdempotency(c.svc, idem, c.requestId, null);
      throw e;
    }
    const body = await response.text();
    // As on /v1: a retry that arrives before the record is stored waits for it, and a failed store
    // costs only the replay, never the answer of money that moved.
    finishIdempotency(c.svc, idem, c.requestId, { status: response.status, contentType: response.headers.get("content-type") ?? "application/json", body });
    return new Response(body, { status: response.status, headers: response.headers });
  };
}
