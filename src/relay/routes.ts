import type { Model, Route } from "../catalog/catalog.ts";
import { GatewayError } from "../errors.ts";
import type { Services } from "../services.ts";
import type { Provider } from "../upstreams/types.ts";
import { isRetryableStatus, passThrough, readVendorError } from "./upstream-error.ts";

// Non-streamed answers send their headers only when complete, so this must allow a whole long generation (the SDKs wait 10 min).
const DEFAULT_FIRST_BYTE_TIMEOUT_MS = 600_000;

export interface Attempt {
  route: Route;
  provider: Provider;
  response: Response;
  /** Aborts the upstream request (client gone, or the stream is over). */
  abort: AbortController;
  attempts: number;
}

export interface AttemptHooks {
  /** Builds and sends the upstream call for one route. Throwing a GatewayError stops the loop. */
  send(route: Route, provider: Provider, signal: AbortSignal): Promise<Response>;
  /**
   * Optional: read ahead of the answer before it is committed (the first SSE event of a stream).
   * Throwing counts as a route failure, so the next route is tried before the client sees a byte.
   */
  confirm?(a: Attempt): Promise<void>;
}

/**
 * Tries the model's routes in order. Server errors, 529, connection errors and timeouts move on
 * to the next route; a vendor's 4xx is the answer; the circuit breaker skips routes that keep failing.
 */
export async function attemptRoutes(svc: Services, model: Model, clientSignal: AbortSignal, hooks: AttemptHooks): Promise<Attempt> {
  let attempts = 0;
  let last: GatewayError | null = null;
  for (const route of model.routes) {
    if (!svc.health.allow(route.key)) continue;
    const provider = svc.providers.get(route.provider.id)!;
    const abort = new AbortController();
    const onClientAbort = () => abort.abort(new Error("client went away"));
    clientSignal.addEventListener("abort", onClientAbort, { once: true });
    const onCutoff = () => abort.abort(svc.cutoff.signal.reason);
    svc.cutoff.signal.addEventListener("abort", onCutoff, { once: true });
    const timeoutMs = provider.config.timeout_ms ?? DEFAULT_FIRST_BYTE_TIMEOUT_MS;
    const timer = setTimeout(() => abort.abort(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    attempts++;
    try {
      const response = await hooks.send(route, provider, abort.signal);
      if (!response.ok) {
        const text = await response.text().catch(() => "");
        const vendor = readVendorError(text);
        if (isRetryableStatus(response.status)) {
          svc.health.failure(route.key, `HTTP ${response.status}${vendor ? ` ${vendor.type}` : ""}`);
          last = vendor && response.status === 529 ? passThrough(529, vendor) : upstreamUnavailable(model.id);
          continue;
        }
        // The upstream answered: the route is healthy, the request was refused.
        svc.health.success(route.key);
        if (vendor) throw passThrough(response.status, vendor);
        throw upstreamUnavailable(model.id);
      }
      const attempt: Attempt = { route, provider, response, abort, attempts };
      if (hooks.confirm) await hooks.confirm(attempt);
      svc.health.success(route.key);
      return attempt;
    } catch (e) {
      if (e instanceof GatewayError) throw e;
      if (clientSignal.aborted) throw new GatewayError("upstream_unavailable", "The client closed the connection.");
      if (svc.cutoff.signal.aborted) throw shuttingDown();
      svc.health.failure(route.key, (e as Error).message ?? String(e));
      last = upstreamUnavailable(model.id);
    } finally {
      clearTimeout(timer);
      clientSignal.removeEventListener("abort", onClientAbort);
      svc.cutoff.signal.removeEventListener("abort", onCutoff);
    }
  }
  if (attempts === 0) {
    throw new GatewayError("no_eligible_route", `No route can serve '${model.id}' right now: every route is failing. Check GET /status.`, {
      retryAfter: 30,
    });
  }
  throw last ?? upstreamUnavailable(model.id);
}

/** A request the gateway ended because it is stopping: not the route's fault, free, and safe to retry. */
export const shuttingDown = () =>
  new GatewayError("upstream_unavailable", "The gateway is shutting down; this request was not charged. Retry it.");

const upstreamUnavailable = (model: string) =>
  new GatewayError("upstream_unavailable", `The upstream provider for '${model}' failed to answer. The request was not charged; retry later.`);
