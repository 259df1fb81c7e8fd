import { createHash } from "node:crypto";
import { presentedKey, type KeyRecord } from "../auth/keys.ts";
import { GatewayError } from "../errors.ts";
import type { LogRow } from "../logs/request-log.ts";
import type { Services } from "../services.ts";
import { readBodyLimited, parseJsonObject } from "./body.ts";
import { errorResponse, requestIdHeaders, toGatewayError } from "./errors.ts";
import { newRequestId } from "../request-id.ts";

export interface KeyedCall {
  svc: Services;
  request: Request;
  requestId: string;
  started: number;
  key: KeyRecord;
  bytes: Uint8Array;
  /** The parsed JSON object (json routes), or the form (multipart routes). */
  json: Record<string, unknown>;
  form: FormData | null;
  search: string;
  /** Filled in by the handler as it learns model, provider, usage and cost. */
  log: LogRow;
  /** A streamed answer writes its log row when the stream ends; the handler sets this. */
  deferLog: boolean;
  /** The ledger write of a completed answer (settle), committed together with the log row. */
  charge: (() => void) | null;
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
    if (opts.bucket === "count_tokens") svc.limiter.take(`${key.id}:ct`, svc.config.countTokensRpm, "count_tokens on this key");
    else svc.limiter.take(`${key.id}:main`, key.rpm ?? svc.config.defaultRpm, "this key");
    const json = opts.body === "json" ? parseJsonObject(bytes) : {};
    const form = opts.body === "multipart" ? await parseForm(request, bytes) : null;

    const idemKey = request.headers.get("idempotency-key");
    if (idemKey && request.method === "POST") {
      const sha = createHash("sha256").update(bytes).digest("hex");
      const begun = await svc.idempotency.begin(key.id, idemKey, sha, requestId);
      if (begun.kind === "replay") {
        log.status = begun.answer.status;
        log.latencyMs = performance.now() - started;
        svc.logs.write(log);
        return new Response(begun.answer.body, {
          status: begun.answer.status,
          headers: { "content-type": begun.answer.contentType, "idempotent-replayed": "true", ...requestIdHeaders(requestId) },
        });
      }
      idem = { keyId: key.id, key: idemKey };
    }

    const call: KeyedCall = { svc, request, requestId, started, key, bytes, json, form, search: url.search, log, deferLog: false, charge: null };
    const response = await handler(call);
    for (const [k, v] of Object.entries(requestIdHeaders(requestId))) response.headers.set(k, v);
    log.status = response.status;
    if (!call.deferLog) {
      // The charge and its log row commit together, before the answer leaves.
      const charge = call.charge;
      await svc.commits.run(() => {
        charge?.();
        log.latencyMs = performance.now() - started;
        svc.logs.write(log);
      });
    }
    return idem ? recordForReplay(svc, idem, response) : response;
  } catch (err) {
    const e = toGatewayError(err);
    if (idem) svc.idempotency.finish(idem.keyId, idem.key, null);
    log.status = e.status;
    log.errorCode = e.code;
    log.latencyMs = performance.now() - started;
    svc.logs.write(log);
    return errorResponse(e, requestId);
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
function recordForReplay(svc: Services, idem: { keyId: number; key: string }, response: Response): Response {
  if (!response.body || response.status < 200 || response.status >= 300) {
    svc.idempotency.finish(idem.keyId, idem.key, null);
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
        svc.idempotency.finish(idem.keyId, idem.key, { status: response.status, contentType, body: text + decoder.decode() });
        c.close();
        return;
      }
      text += decoder.decode(value, { stream: true });
      c.enqueue(value);
    },
    cancel(reason) {
      // A client that went away mid-answer leaves nothing complete to replay; a retry runs again.
      svc.idempotency.finish(idem.keyId, idem.key, null);
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: response.status, headers: response.headers });
}
