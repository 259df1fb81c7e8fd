import { scopedIdempotencyKey } from "../store/idempotency/contract.ts";
import type { SessionCall } from "./session-guard.ts";

// Idempotency-Key on the dashboard's writes that move money (docs/dashboard.md#idempotent-credits-and-debits):
// the records, scopes and rules of /v1 (store/idempotency, docs/api.md#rules), owned by the session's
// account rather than an API key's. A script or a page that sends the same credit twice, with one
// key, moves the money once and reads the first answer again.

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
    const store = c.svc.idempotency;
    const begun = await store.begin(owner, idemKey, sha, c.requestId);
    if (begun.kind === "replay") {
      const { status, contentType, body } = begun.answer;
      return new Response(body, { status, headers: { "content-type": contentType, "idempotent-replayed": "true" } });
    }
    let response: Response;
    try {
      response = await h(c, ...rest);
    } catch (e) {
      await store.finish(owner, idemKey, null);
      throw e;
    }
    const body = await response.text();
    const contentType = response.headers.get("content-type") ?? "application/json";
    // Awaited: the replay must be stored before the answer says the money moved.
    await store.finish(owner, idemKey, { status: response.status, contentType, body });
    return new Response(body, { status: response.status, headers: response.headers });
  };
}
