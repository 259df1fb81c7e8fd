import type { Model, Route } from "../catalog/catalog.ts";
import type { JsonObject } from "../wire/shapes.ts";
import { GatewayError } from "../core/errors.ts";
import { describe, events } from "../core/events.ts";
import type { LogRow } from "../store/request-log/contract.ts";
import type { RelayServices } from "./context.ts";
import type { Provider } from "../upstreams/types.ts";
import { SseSizeGuard } from "../wire/sse.ts";
import { AttemptClock, limitsOf, timedResponse } from "./timeouts.ts";
import { classifyStatus, missingRoute, passThrough, readErrorBody, readVendorError, refusesCredential, rejectsKey, restsKey } from "./upstream-error.ts";
import { AnsweredAttempt } from "./attempt.ts";
import { REJECTED_REST_S, restSeconds, type KeyPool, type KeySlot } from "./capacity.ts";

export interface Attempt<C = unknown> {
  route: Route;
  provider: Provider;
  response: Response;
  /**
   * Aborts the upstream request (client gone, or the stream is over). A stream's only: a plain
   * answer's, read whole by `confirm`, is reused by a later attempt once attemptRoutes returns.
   */
  abort: AbortController;
  attempts: number;
  /** The provider key that answered: counted in flight until the answer ends (a stream's at its settle). */
  slot: KeySlot;
  /** Stops its clock, leaves the cutoff and the key's count in flight; once, however often called (relay/attempt.ts). */
  release(): void;
  /** What `confirm` resolved with (AttemptHooks.confirm): the hooks need no closure of their own to keep it. */
  confirmed: C | undefined;
}

/** The request as the route loop records it: its log row names the route last tried, even when all fail. */
export interface TriedBy {
  requestId: string;
  request: Request;
  log: LogRow;
  /** The status the last route tried answered with, when it answered (for the operator's 5xx line). */
  upstreamStatus?: number;
}

export interface AttemptHooks<C = unknown> {
  /** Builds and sends the upstream call for one route with one of its provider's keys. Throwing a GatewayError stops the loop. */
  send(route: Route, provider: Provider, signal: AbortSignal, apiKey: string | undefined): Promise<Response>;
  /**
   * Optional: read ahead of the answer before it is committed (the first SSE event of a stream).
   * Throwing counts as a route failure, so the next route is tried before the client sees a byte.
   * A plain (non-streamed) answer's confirm reads its body to the end: the call is then over. What
   * it resolves with is kept on the attempt (`confirmed`).
   */
  confirm?(a: Attempt): Promise<C>;
  /** Whether the client asked for a stream; default: the log row's `stream`. Picks the first-byte timeout. */
  stream?: boolean;
}

// Controllers of plain answers read to the end and never aborted, for later attempts: fetch lets go
// of a signal when its call ends, and a new AbortController cost 0.7 to 0.9 µs, the dearest
// object of an attempt (bench/RESULTS.md). Bounded: a burst's leftovers are left to the collector.
const spareControllers: AbortController[] = [];
const MAX_SPARE_CONTROLLERS = 64;

/** Why the last attempt did not answer: `rest` when its key was overloaded (then `error` is the vendor's 529, if any). */
class Failure {
  constructor(
    readonly error: GatewayError | null,
    readonly rest: boolean,
  ) {}
}

/**
 * Tries the model's routes in order (weighted ones first, by their turn: relay/capacity.ts), and
 * on each route its provider's keys, fewest in flight first. Server errors, connection errors and
 * timeouts move on to the next route; an overloaded key (429, 529, overloaded_error) rests and the
 * next key or route is tried; one of several keys the provider refuses (revoked, out of credit)
 * sits out and the next key is tried; a vendor's other 4xx is the answer; the circuit breaker skips routes
 * that keep failing. All of it before the client sees a byte.
 */
export async function attemptRoutes<C>(svc: RelayServices, model: Model, call: TriedBy, hooks: AttemptHooks<C>): Promise<Attempt<C>> {
  const capacity = svc.capacity;
  const clientSignal = call.request.signal;
  const stream = hooks.stream ?? call.log.stream === true;
  let attempts = 0;
  let last: Failure | null = null;
  let skippedResting = false;
  for (const route of capacity.routes(model)) {
    const pool = capacity.pool(route.provider.id);
    let slot = pool.pick(0, capacity.now());
    // Before the circuit: a route with every key resting must not spend the half-open probe.
    if (!slot) {
      skippedResting = true;
      continue;
    }
    if (!svc.health.allow(route.key)) continue;
    const provider = svc.providers.get(route.provider.id)!;
    let tried = 0;
    // One upstream call per key: an overloaded key `continue`s to the provider's next key, any other
    // failure `break`s to the next route. Written inline: the common one-key call allocates nothing more.
    for (; slot; slot = pool.pick(tried, capacity.now())) {
      tried |= 1 << slot.index;
      attempts++;
      const abort = spareControllers.pop() ?? new AbortController();
      const clock = new AttemptClock(abort, limitsOf(provider.config, stream));
      // The clock is the listener (AttemptClock.handleEvent): no closure per attempt. Removed in the
      // finally below whatever happens, and a signal aborts once: `{ once: true }` would only double
      // what adding a listener costs (0.4 µs a request, bench/RESULTS.md).
      clientSignal.addEventListener("abort", clock);
      svc.cutoff.hold(abort);
      let handedOff = false;
      call.log.provider = route.provider.id;
      call.log.upstreamModel = route.upstreamModel;
      call.log.attempts = attempts;
      call.upstreamStatus = undefined;
      slot.inFlight++;
      try {
        const sentAt = performance.now();
        const raw = await hooks.send(route, provider, abort.signal, slot.key);
        call.log.upstreamLatencyMs = performance.now() - sentAt;
        const type = raw.headers.get("content-type") ?? "";
        const sse = type.startsWith("text/event-stream");
        // Every body is read under the clock; anything parsed as SSE is also bounded per event. A plain
        // JSON answer is read in one go by the confirm step below, so it is timed as one read (its whole
        // body within the idle time) rather than wrapped: the wrapper cost 10–18 % of the CPU of a
        // plain request (bench/RESULTS.md).
        const response = stream || sse ? timedResponse(raw, clock, new SseSizeGuard()) : clock.wholeRead(raw);
        if (!response.ok) {
          const text = await readErrorBody(response);
          const vendor = readVendorError(text);
          call.upstreamStatus = response.status;
          const kind = classifyStatus(response.status);
          reportStatus(svc, call, route, response.status, kind === "unexpected" ? "(not an answer a vendor gives)" : vendor?.type, route.provider.api_keys ? slot.index : undefined);
          if (restsKey(response.status, vendor)) {
            // The key's limits, not the route's health: the circuit is left as it is.
            const now = svc.capacity.now();
            pool.rest(slot, restSeconds(response.headers.get("retry-after"), now), now);
            last = new Failure(vendor && response.status === 529 ? passThrough(529, vendor) : null, true);
            continue;
          }
          if (pool.slots.length > 1 && rejectsKey(response.status, vendor)) {
            // One of several keys revoked or out of credit: it sits out and its siblings serve. With
            // one key there is no sibling, and the vendor's answer is the client's as before.
            pool.rest(slot, REJECTED_REST_S, svc.capacity.now());
            last = new Failure(vendor ? passThrough(response.status, vendor) : upstreamUnavailable(model.id), false);
            continue;
          }
          if (kind !== "refusal" || missingRoute(response.status, vendor)) {
            svc.health.failure(route.key, `HTTP ${response.status}${vendor ? ` ${vendor.type}` : ""}`);
            last = new Failure(upstreamUnavailable(model.id), false);
            break;
          }
          // The upstream answered: the route is healthy, the request was refused.
          svc.health.success(route.key);
          if (vendor) throw passThrough(response.status, vendor);
          throw upstreamUnavailable(model.id);
        }
        if (bodiless(response, stream || sse)) throw new Error(`HTTP ${response.status} answer without a body`);
        // Either would only be read to its end to fail there: a JSON body is no stream, and an SSE
        // body to a JSON request can run on for the whole total timeout.
        if (stream && type.startsWith("application/json")) throw new Error("a JSON answer to a streamed request");
        if (!stream && sse) throw new Error("an SSE answer to a non-streamed request");
        const attempt = new AnsweredAttempt<C>(route, provider, response, abort, attempts, slot, clock, svc.cutoff);
        if (hooks.confirm) attempt.confirmed = await hooks.confirm(attempt);
        // A plain answer has been read whole by confirm: nothing left to time or hold.
        if (!stream) attempt.release();
        if (call.log.stream) call.log.ttfbMs = performance.now() - sentAt;
        svc.health.success(route.key);
        // A stream's body is still being read: its clock stops when the relay ends or cancels it.
        handedOff = true;
        return attempt;
      } catch (e) {
        if (e instanceof GatewayError) throw e;
        // Ended by the instance's fence (Cutoff.cut): its answer, not the route's failure.
        if (abort.signal.reason instanceof GatewayError) throw abort.signal.reason;
        if (clientSignal.aborted) throw new GatewayError("upstream_unavailable", "The client closed the connection.");
        if (svc.cutoff.aborted) throw shuttingDown();
        const reason = abort.signal.aborted ? `timeout: ${describe(abort.signal.reason)}` : describe(e);
        events.upstreamFailed({ requestId: call.requestId, route: route.key, provider: route.provider.id, reason });
        svc.health.failure(route.key, (e as Error).message ?? String(e));
        last = new Failure(upstreamUnavailable(model.id), false);
        break;
      } finally {
        clientSignal.removeEventListener("abort", clock);
        if (!handedOff) {
          // A failed attempt's connection is closed, not left to the upstream. An answer handed over
          // is released by its holder instead (relay/attempt.ts).
          clock.stop();
          abort.abort(new Error("attempt failed"));
          svc.cutoff.release(abort);
          slot.inFlight--;
        } else if (!stream && hooks.confirm && !abort.signal.aborted && spareControllers.length < MAX_SPARE_CONTROLLERS) {
          // A plain answer read to its end: its fetch is over and nothing else holds the controller.
          spareControllers.push(abort);
        }
      }
    }
  }
  if (last?.rest || (attempts === 0 && skippedResting)) throw overloaded(svc, model, last?.error ?? null);
  if (attempts === 0) {
    throw new GatewayError("no_eligible_route", `No route can serve '${model.id}' right now: every route is failing. Check GET /status.`, {
      retryAfter: 30,
    });
  }
  throw last?.error ?? upstreamUnavailable(model.id);
}

/**
 * Whether a successful answer has no body at all. A body read as events (`streamed`) is asked for as
 * it will be read anyway; a JSON answer is read whole by `text()`, and asking fetch's answer for its
 * `body` first built a ReadableStream that `text()` then had to drain (3.5 to 4 µs a request,
 * bench/RESULTS.md). A fetched answer has no body exactly when its status is a null body status
 * (Fetch standard), and of those a 2xx can only be 204 or 205. An answer built in process (the demo
 * provider) always has one.
 */
function bodiless(response: Response, streamed: boolean): boolean {
  if (streamed) return !response.body;
  return response.status === 204 || response.status === 205;
}

/**
 * Every key that could serve the model rests: the vendors' own overload answer (529
 * overloaded_error, docs/api.md#errors), the last vendor's text when it sent one, with a
 * Retry-After for when the first key wakes. Nothing was charged.
 */
function overloaded(svc: RelayServices, model: Model, vendor: GatewayError | null): GatewayError {
  const now = svc.capacity.now();
  let wake = Infinity;
  for (const r of model.routes) {
    const w = svc.capacity.pool(r.provider.id).wake(now);
    if (w > 0 && w < wake) wake = w;
  }
  const retryAfter = wake === Infinity ? 1 : Math.max(1, Math.ceil((wake - now) / 1000));
  if (vendor) return GatewayError.upstream(vendor.status, vendor.type, vendor.code, vendor.message, vendor.headers, retryAfter);
  return GatewayError.upstream(
    529,
    "overloaded_error",
    "overloaded_error",
    `Overloaded: every upstream key for '${model.id}' is at its limit. The request was not charged; retry in ${retryAfter} s.`,
    {},
    retryAfter,
  );
}

/** A request the gateway ended because it is stopping: not the route's fault, free, and safe to retry. */
export const shuttingDown = () =>
  new GatewayError("upstream_unavailable", "The gateway is shutting down; this request was not charged. Retry it.");

/** A plain answer read whole: its text and its parse. */
export interface WholeAnswer {
  text: string;
  json: JsonObject;
}

/**
 * Reads a whole non-streamed answer inside the route loop (as AttemptHooks.confirm): a body cut
 * mid-way or one that is not JSON is that route's failure (502 or the next route), not a 500. The
 * reasons never quote the body: it is content.
 */
export function readJsonAnswer(a: Attempt): Promise<WholeAnswer> {
  // Not async: the read's own promise carries on to the parse, where an async layer made its
  // generator, promise and scopes every answer (bench/RESULTS.md).
  const status = a.response.status;
  return a.response.text().then((text) => wholeAnswer(text, status), answerCut);
}

function answerCut(e: unknown): never {
  throw new Error(`answer cut while reading it: ${describe(e)}`);
}

/** A plain answer's text as its parse, or why it is no answer (thrown: the route's failure). */
function wholeAnswer(text: string, status: number): WholeAnswer {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    // reported below, without the parser's quote of the body
  }
  if (!json || typeof json !== "object" || Array.isArray(json)) throw new Error(`answer is not a JSON object (${text.length} bytes)`);
  const problem = notAnAnswer(json as JsonObject, status);
  if (problem) throw new Error(problem);
  return { text, json: json as JsonObject };
}

/**
 * Why a JSON object with a success status is no answer: a vendor error sent with HTTP 200 (some
 * compatible servers and proxies do) or a body with none of the parts an answer has (Messages'
 * content, Chat's choices, Images' data). Relayed, either would be charged as a completion.
 */
function notAnAnswer(json: JsonObject, status: number): string | null {
  const answer = Array.isArray(json.content) || Array.isArray(json.choices) || Array.isArray(json.data);
  if (json.type === "error" || (!answer && json.error)) {
    const err = json.error as { type?: unknown; code?: unknown } | null;
    const type = typeof err?.type === "string" ? err.type : typeof err?.code === "string" ? err.code : "untyped";
    return `answer is a vendor error (${type}) sent with HTTP ${status}`;
  }
  return answer ? null : `answer has no content, choices or data (HTTP ${status})`;
}

/**
 * One event line per failed answer. 401, and 403 for authentication or permission, refuse the
 * gateway's own credentials: the operator's configuration, so it is named as such.
 */
function reportStatus(svc: RelayServices, call: TriedBy, route: Route, status: number, vendorType: string | undefined, keyIndex: number | undefined): void {
  const failure = {
    requestId: call.requestId,
    route: route.key,
    provider: route.provider.id,
    upstreamStatus: status,
    reason: `HTTP ${status}${vendorType ? ` ${vendorType}` : ""}`,
  };
  if (refusesCredential(status, vendorType)) {
    events.providerKeyRejected({ ...failure, providerIndex: svc.config.providers.findIndex((p) => p.id === route.provider.id), keyIndex });
  } else {
    events.upstreamFailed(failure);
  }
}

const upstreamUnavailable = (model: string) =>
  new GatewayError("upstream_unavailable", `The upstream provider for '${model}' failed to answer. The request was not charged; retry later.`);
