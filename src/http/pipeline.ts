import { createHash } from "node:crypto";
import { presentedKey, type KeyRecord } from "../auth/keys.ts";
import { GatewayError } from "../core/errors.ts";
import { scopedIdempotencyKey, type StoredAnswer } from "../limits/idempotency.ts";
import type { Bucket } from "../limits/rate-limit.ts";
import { events } from "../logs/events.ts";
import type { LogRow } from "../logs/request-log.ts";
import type { RelayCall } from "../relay/context.ts";
import type { Services } from "../services.ts";
import { readBodyLimited, parseJsonObject } from "./body.ts";
import { errorResponse, requestIdHeaders, toGatewayError } from "./errors.ts";
import { newRequestId } from "../core/request-id.ts";

/** A key route's call: the relay's RelayCall, with the whole of the process for the routes served here. */
export interface KeyedCall extends RelayCall {
  svc: Services;
}

export interface KeyRouteOptions {
  bucket: "main" | "count_tokens";
  body: "json" | "multipart" | "none";
}

/**
 * The front half of every key route, in the order of the spec: pause, body limit, key, rate limit,
 * JSON, idempotency. The handler does the rest; errors from anywhere become one error response.
 */
export async function runKeyRoute(
  svc: Services,
  request: Request,
  url: { pathname: string; search: string },
  clientIp: () => string | null,
  opts: KeyRouteOptions,
  handler: (c: KeyedCall) => Promise<Response>,
): Promise<Response> {
  const requestId = newRequestId();
  const started = performance.now();
  const log: LogRow = { requestId, method: request.method, path: url.pathname, status: 0, latencyMs: 0 };
  let idem: { keyId: number; key: string } | null = null;
  let rate: Bucket | null = null;
  let call: KeyedCall | null = null;
  try {
    // The spec's order is pause, body, key: the switch is read after the body has arrived, so that a
    // pause the operator sets meanwhile still turns the request away.
    let bytes: Uint8Array;
    try {
      bytes = opts.body === "none" ? new Uint8Array(0) : await readBodyLimited(request);
    } catch (e) {
      if (svc.settings.paused) throw pausedError();
      throw e;
    }
    if (svc.settings.paused) throw pausedError();
    const presented = presentedKey(request.headers);
    const key = svc.keys.check(presented, svc.keys.lookup(presented), clientIp);
    log.keyId = key.id;
    log.accountId = key.accountId;
    log.keyPrefix = key.prefix;
    rate =
      opts.bucket === "count_tokens"
        ? svc.limiter.take(`${key.id}:ct`, svc.config.countTokensRpm, "count_tokens on this key")
        : svc.limiter.take(`${key.id}:main`, key.rpm ?? svc.config.defaultRpm, "this key");
    const json = opts.body === "json" ? parseJsonObject(bytes) : {};
    const form = opts.body === "multipart" ? await parseForm(request, bytes) : null;

    const idemKey = scopedIdempotencyKey(url.pathname, request.headers.get("idempotency-key"));
    if (idemKey && request.method === "POST") {
      const sha = createHash("sha256").update(bytes).digest("hex");
      const begun = await svc.idempotency.begin(key.id, idemKey, sha, requestId);
      if (begun.kind === "replay") {
        log.status = begun.answer.status;
        log.latencyMs = performance.now() - started;
        svc.logs.write(log);
        const replay = new Response(begun.answer.body, {
          status: begun.answer.status,
          headers: { "content-type": begun.answer.contentType, "idempotent-replayed": "true", ...requestIdHeaders(requestId) },
        });
        svc.limiter.withHeaders(replay.headers, rate);
        return replay;
      }
      idem = { keyId: key.id, key: idemKey };
    }

    call = { svc, request, requestId, started, key, bytes, json, form, search: url.search, log, hold: null };
    const response = await handler(call);
    for (const [k, v] of Object.entries(requestIdHeaders(requestId))) response.headers.set(k, v);
    svc.limiter.withHeaders(response.headers, rate);
    if (!call.hold) {
      // A route that holds no money (count_tokens, /v1/me): its row is written here.
      log.status = response.status;
      await svc.commits.run(() => {
        log.latencyMs = performance.now() - started;
        svc.logs.write(log);
      });
    }
    return idem ? recordForReplay(svc, idem, requestId, response, log) : response;
  } catch (err) {
    // Nothing in here may throw: a failure escaping to the app's error handler would answer under a
    // new request id, with no row for the one the client was given.
    const e = toGatewayError(err);
    // The relay's own finally has resolved it; this is the last resort should a path ever miss it.
    call?.hold?.close("failed");
    if (idem) finishIdempotency(svc, idem, requestId, null);
    log.status = e.status;
    log.errorCode = e.code;
    log.latencyMs = performance.now() - started;
    // Through the group commit, which waits out another process's write lock between turns; the
    // error answer does not wait for it.
    void svc.logs.writeBatched(svc.commits, log);
    const ctx = request.signal.aborted ? { quiet: true } : { route: routeOf(log), provider: log.provider ?? undefined, upstreamStatus: call?.upstreamStatus };
    const response = errorResponse(e, requestId, {}, { ...ctx, path: url.pathname });
    if (rate) svc.limiter.withHeaders(response.headers, rate);
    return response;
  }
}

const routeOf = (log: LogRow) => (log.provider && log.upstreamModel ? `${log.provider}/${log.upstreamModel}` : undefined);

/** Ends an idempotency claim; a failed write (full disk) costs only the replay, so it is reported, not thrown. */
function finishIdempotency(svc: Services, idem: { keyId: number; key: string }, requestId: string, answer: StoredAnswer | null): void {
  try {
    svc.idempotency.finish(idem.keyId, idem.key, answer);
  } catch (e) {
    events.writeFailed("idempotency", requestId, e);
  }
}

const pausedError = () =>
  new GatewayError("product_paused", "The service is paused by its operator. Retry in 60 seconds.", { retryAfter: 60 });

async function parseForm(request: Request, bytes: Uint8Array): Promise<FormData> {
  const type = request.headers.get("content-type") ?? "";
  if (!type.startsWith("multipart/form-data")) {
    throw new GatewayError("invalid_request", "This route takes multipart/form-data.");
  }
  try {
    return (await new Response(bytes, { headers: { "content-type": type } }).formData()) as unknown as FormData;
  } catch (e) {
    throw new GatewayError("invalid_request", `Malformed multipart body: ${(e as Error).message}`);
  }
}

/** Keeps a copy of the answer as it goes out, stored for replay once complete. */
function recordForReplay(svc: Services, idem: { keyId: number; key: string }, requestId: string, response: Response, log: LogRow): Response {
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
