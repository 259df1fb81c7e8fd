import { presentedKey } from "../auth/presented-key.ts";
import type { KeyRecord } from "../store/keys/contract.ts";
import { GatewayError } from "../core/errors.ts";
import { scopedIdempotencyKey } from "../store/idempotency/contract.ts";
import type { Bucket } from "../limits/rate-limit.ts";
import { events } from "../core/events.ts";
import type { LogRow } from "../store/request-log/contract.ts";
import type { Services } from "../services.ts";
import { readBodyLimited, parseJsonObject, tooLarge } from "./body.ts";
import { BODY_LIMIT_BYTES } from "../wire/body-limit.ts";
import type { Endpoint } from "./endpoints.ts";
import { replayedErrorBody, requestIdHeaders, setRequestIdHeaders } from "./errors.ts";
import type { Exchange, KeyedCall } from "./exchange.ts";
import { formFingerprint, parseForm } from "./form.ts";
import { finishIdempotency } from "./idempotency.ts";
import { refuseModelLookalikes, validate } from "./schemas.ts";

const NO_BODY = new Uint8Array(0);
/** The longest requested model name the log keeps. */
const MODEL_NAME_MAX = 200;

/**
 * A key endpoint, in this order: pause, declared body size, key, rate limits, body, JSON,
 * idempotency; then the body against the endpoint's schema, and its handler. The body is read only
 * once the key and its buckets let the request in, so a refused request costs no read and no parse
 * of up to 20 MiB. What it takes on the way (the bucket, the idempotency claim, the call and its
 * hold) it leaves on the exchange, for the catch site in app.ts should anything throw.
 */
export async function runKeyEndpoint(x: Exchange, e: Endpoint<"key">): Promise<Response> {
  const { svc, request, requestId, started, log } = x;
  if (svc.settings.paused) throw pausedError();
  events.servedAgain();
  // Each read of a header (and of `request.headers`) is a native call: the length is read once for
  // the three checks of the declared size.
  const headers = request.headers;
  const length = headers.get("content-length");
  const declared = Number(length ?? NaN);
  if (e.body !== "none" && declared > BODY_LIMIT_BYTES) throw tooLarge(BODY_LIMIT_BYTES);
  const presented = presentedKey(headers);
  // A key known to this process answers at once; PostgreSQL's first lookup of a key is a query. A
  // value is not awaited (here and for the buckets): each await is a turn of the microtask queue.
  const found = svc.keys.lookup(presented);
  const rec = found instanceof Promise ? await found : found;
  // Named before the checks: a known key refused (revoked, expired, an address off its list) is
  // still its holder's request, and support finds it by the key and account on its log row.
  if (rec) {
    log.keyId = rec.id;
    log.accountId = rec.accountId;
    log.keyPrefix = rec.prefix;
  }
  const key = svc.keys.check(presented, rec, x);
  const taken = takeBuckets(svc, key, e);
  const rate = (x.rate = taken instanceof Promise ? await taken : taken);
  if (e.paid && largeBody(headers, length, declared)) await refuseNothingToSpend(svc, key);
  let bytes: Uint8Array;
  try {
    if (e.body === "none") bytes = NO_BODY;
    else if (Number.isFinite(declared)) {
      // readBodyLimited's path for a declared length (within the limit, checked above), awaited here
      // without its async layer: 5 objects a request (bench/RESULTS.md).
      bytes = await request.bytes();
      if (bytes.byteLength > BODY_LIMIT_BYTES) throw tooLarge(BODY_LIMIT_BYTES);
    } else bytes = await readBodyLimited(request, BODY_LIMIT_BYTES, declared);
  } catch (err) {
    if (svc.settings.paused) throw pausedError();
    throw err;
  }
  // Read again once the body has arrived, so that a pause the operator set meanwhile still turns the request away.
  if (svc.settings.paused) throw pausedError();
  const json = e.body === "json" ? parseJsonObject(bytes) : {};
  const form = e.body === "multipart" ? await parseForm(request, bytes) : null;
  // The name as asked, before any refusal, so a 404 model_not_found still says what was asked for;
  // resolveModel replaces it with the catalog's id. Bounded: it is the client's text.
  const asked = json.model ?? form?.get("model");
  if (typeof asked === "string") log.model = asked.slice(0, MODEL_NAME_MAX);

  const idemKey = scopedIdempotencyKey(x.pathname, headers.get("idempotency-key"));
  if (idemKey && request.method === "POST") {
    const sha = form ? await formFingerprint(form) : Bun.SHA256.hash(bytes, "hex");
    // The account's, not the key's (docs/api.md#rules): a client that retries on another of its keys runs once.
    const begun = await svc.idempotency.begin(key.accountId, idemKey, sha, requestId);
    if (begun.kind === "replay") {
      log.status = begun.answer.status;
      log.latencyMs = performance.now() - started;
      await svc.logs.write(log);
      const stored = begun.answer.status >= 300 ? replayedErrorBody(begun.answer.body, requestId) : begun.answer.body;
      const replay = new Response(stored, {
        status: begun.answer.status,
        headers: {
          "content-type": begun.answer.contentType,
          "idempotent-replayed": "true",
          // A stored failure is one that must not run twice (store/idempotency/claims.ts, replayable).
          ...(begun.answer.status >= 300 ? { "x-should-retry": "false" } : {}),
          ...requestIdHeaders(requestId),
        },
      });
      svc.limiter.withHeaders(replay.headers, rate);
      return replay;
    }
    x.idem = { accountId: key.accountId, key: idemKey };
  }
  // After the idempotency claim, as when each handler checked its own body: a claim that meets an
  // invalid body is released by the catch site, and a conflicting one still answers 409 first.
  if (e.body === "json" && e.schema) {
    validate(e.schema, json);
    refuseModelLookalikes(json);
  }

  // Every field the relay may set is here from the start: the call keeps one shape.
  const call: KeyedCall = (x.call = { svc, request, requestId, started, key, bytes, json, form, search: x.search, log, hold: null, bodySize: undefined, sentSize: undefined, upstreamStatus: undefined });
  const response = await e.handler(call);
  // One read of the answer's headers for both sets: each read is a native call.
  const answerHeaders = response.headers;
  setRequestIdHeaders(answerHeaders, requestId);
  svc.limiter.withHeaders(answerHeaders, rate);
  if (!call.hold) {
    // An endpoint that holds no money (count_tokens, /v1/me): its row is written here.
    log.status = response.status;
    await svc.commits.run(() => {
      log.latencyMs = performance.now() - started;
      return svc.logs.write(log);
    });
  }
  return x.idem ? recordForReplay(svc, x.idem, requestId, response, log) : response;
}

/**
 * Takes from the request's buckets: its key's own (count_tokens has its own) and, with `[limits]
 * account_rpm`, its account's, shared by all the account's keys on every key route. Without it, the
 * one bucket is taken without a list or a Take object.
 */
function takeBuckets(svc: Services, key: KeyRecord, e: Endpoint<"key">): Bucket | Promise<Bucket> {
  const ct = e.bucket === "count_tokens";
  const id = ct ? `${key.id}:ct` : `${key.id}:main`;
  const rpm = ct ? svc.config.countTokensRpm : (key.rpm ?? svc.config.defaultRpm);
  const what = ct ? "count_tokens on this key" : "this key";
  const accountRpm = svc.config.accountRpm;
  if (accountRpm === null) return svc.limiter.take(id, rpm, what);
  return svc.limiter.takeAll([{ id, rpm, what }, { id: `acct:${key.accountId}`, rpm: accountRpm, what: "all the keys of this account together" }]);
}

/** Past this a body costs real work to read and parse (a 7 MB JSON: about 60 ms of the event loop). */
const LARGE_BODY_BYTES = 1024 * 1024;

/** A body declared over LARGE_BODY_BYTES (`length`: its content-length, and `declared` as a number), or sent without a length (chunked): its size is unknown until read. */
function largeBody(headers: Headers, length: string | null, declared: number): boolean {
  return length === null ? headers.has("transfer-encoding") : declared > LARGE_BODY_BYTES;
}

/**
 * An account with nothing to spend cannot pass any paid request's hold when no model is free: its
 * large body is refused 402 before it is read or parsed, so such a key cannot make the event loop
 * work for it. Small bodies skip the check and meet the same 402 at their hold, one balance read
 * cheaper on PostgreSQL.
 */
async function refuseNothingToSpend(svc: Services, key: KeyRecord): Promise<void> {
  if (svc.catalog.hasFreeModel) return;
  const { spendableNano } = await svc.ledger.balance(key.accountId);
  if (spendableNano <= 0) {
    throw new GatewayError("insufficient_balance", "Your credit balance is too low: nothing is spendable. Top up your balance.");
  }
}

const pausedError = () =>
  new GatewayError("product_paused", "The service is paused by its operator. Retry in 60 seconds.", { retryAfter: 60 });

/** Keeps a copy of the answer as it goes out, stored for replay once complete. */
function recordForReplay(svc: Services, idem: { accountId: number; key: string }, requestId: string, response: Response, log: LogRow): Response {
  if (!response.body || response.status < 200 || response.status >= 300) {
    finishIdempotency(svc, idem, requestId, null);
    return response;
  }
  const contentType = response.headers.get("content-type") ?? "application/json";
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const body = new ReadableStream<Uint8Array>({
    async pull(c) {
      const { done, value } = await reader.read();
      if (done) {
        // A stream that ended in an error event failed: a failed request is not replayed, a retry runs again.
        const failed = log.errorCode != null;
        finishIdempotency(svc, idem, requestId, failed ? null : { status: response.status, contentType, body: text + decoder.decode() });
        c.close();
        return;
      }
      text += decoder.decode(value, { stream: true });
      c.enqueue(value);
    },
    cancel(reason) {
      // A client that went away mid-answer leaves nothing complete to replay; a retry runs again.
      finishIdempotency(svc, idem, requestId, null);
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: response.status, headers: response.headers });
}
