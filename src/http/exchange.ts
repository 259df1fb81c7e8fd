import type { Server } from "bun";
import { clientAddress } from "../core/ip.ts";
import { newRequestId } from "../core/request-id.ts";
import type { Bucket } from "../limits/rate-limit.ts";
import type { LogRow } from "../store/request-log/contract.ts";
import type { RelayCall } from "../relay/context.ts";
import type { Services } from "../services.ts";

// One request as the machinery of app.ts sees it, from the endpoint it names to its answer. The
// handlers are given a part of it (OpenCall, KeyedCall); the one catch site reads the rest to log
// and render a failure the way the request had got so far.

/** What a handler of an endpoint that takes no API key is given. */
export interface OpenCall {
  svc: Services;
  request: Request;
  /** The path as the URL parser normalised it, without the query. */
  pathname: string;
  /** The endpoint the path names, whatever the method: its CORS and error envelope apply to every answer on it. */
  endpoint: EndpointTraits | undefined;
  /** The client's address (trust_proxy applied), asked for only when needed: a native call otherwise (1 % of the CPU at c=16). */
  clientIp(): string | null;
}

/** A key endpoint's call: the relay's RelayCall, with the whole of the process for the handlers served here. */
export interface KeyedCall extends RelayCall {
  svc: Services;
}

/** The endpoint fields the machinery reads before and after a handler (endpoints.ts has the whole row). */
export interface EndpointTraits {
  /** Matches the pathname (without query), a trailing slash allowed; `{name}` parts are named groups. */
  pattern: RegExp;
  /** CORS `*` on every answer, the preflight included: the four public GETs, which browsers may call (docs/api.md#cors). */
  cors: boolean;
  /** The error body: Anthropic's envelope around the error object on the Messages dialect's endpoints (errors.ts). */
  envelope: "standard" | "messages";
  /** Its 5xx is no operator event: an orchestrator's probe asks every few seconds. */
  quiet: boolean;
  /**
   * Part of the API: named by the 404's list, answered 405 on other methods, served at the target a
   * URL normalises to, in the OpenAPI document and the metrics labels. The operator's paths are not:
   * served at their exact path only, with no request id and no log row.
   */
  published: boolean;
  /** A dashboard endpoint under /api/ (a browser session): its answers are never cached, and the model API's 404 list leaves it out. */
  dashboard: boolean;
}

export interface Exchange extends OpenCall {
  search: string;
  requestId: string;
  started: number;
  /** The request log row; the pipeline adds the key and the relay what it learns. */
  log: LogRow;
  /** A request of the API under /v1: its successes carry the request id too (every error answer does), and it writes a log row. */
  api: boolean;
  /** Whether the answer writes `log`: API requests do, unless refused past the refusal budget. */
  logged: boolean;
  /** Taken, claimed and built by the key pipeline as it gets there; the catch site undoes or reports them. */
  rate: Bucket | null;
  idem: { accountId: number; key: string } | null;
  call: KeyedCall | null;
}

/**
 * An exchange as a class: its client address is a method of the prototype, where an object literal
 * made a closure and its scope for every request (bench/RESULTS.md). Path and query are cut from the
 * URL without a URL object, or an object for the pair: this runs on every request.
 */
class RequestExchange implements Exchange {
  readonly pathname: string;
  readonly search: string;
  readonly requestId: string;
  readonly started: number;
  readonly log: LogRow;
  readonly api: boolean;
  logged: boolean;
  rate: Bucket | null = null;
  idem: { accountId: number; key: string } | null = null;
  call: KeyedCall | null = null;
  private ip: string | null | undefined = undefined;

  constructor(
    readonly svc: Services,
    readonly request: Request,
    private readonly server: Server<unknown> | null,
    public endpoint: EndpointTraits | undefined,
  ) {
    const requestId = (this.requestId = newRequestId());
    const url = request.url;
    const start = url.indexOf("/", url.indexOf("//") + 2);
    const q = url.indexOf("?", start);
    const pathname = (this.pathname = q === -1 ? url.slice(start) : url.slice(start, q));
    this.search = q === -1 ? "" : url.slice(q);
    this.started = performance.now();
    this.log = newLogRow(requestId, request.method, pathname);
    // The operator's paths are outside the API even where a router takes /v1/ for `/`.
    this.api = this.logged = pathname.startsWith("/v1/") && endpoint?.published !== false;
    // The row records the address the allow-lists check, computed once per request and shared with them.
    if (this.api) this.log.clientIp = this.clientIp();
  }

  clientIp(): string | null {
    if (this.ip === undefined) {
      // X-Forwarded-For is read only when some proxy is trusted: otherwise it is never believed.
      const trusted = this.svc.config.trustProxy;
      const request = this.request;
      this.ip = clientAddress(this.server?.requestIP(request)?.address ?? null, trusted.length === 0 ? null : request.headers.get("x-forwarded-for"), trusted);
    }
    return this.ip;
  }
}

export function newExchange(svc: Services, request: Request, server: Server<unknown> | null, endpoint: EndpointTraits | undefined): Exchange {
  return new RequestExchange(svc, request, server, endpoint);
}

/**
 * A request's log row with every field it can get, unset ones undefined (as absent ones read):
 * made with 5 keys, it grew one key at a time to about 25 as the request went, changing its shape
 * each time; made whole it keeps one (bench/RESULTS.md). Keys in LogRow's order.
 */
function newLogRow(requestId: string, method: string, path: string): LogRow {
  return {
    requestId,
    accountId: undefined,
    keyId: undefined,
    method,
    path,
    endpoint: undefined,
    model: undefined,
    provider: undefined,
    upstreamModel: undefined,
    stream: undefined,
    status: 0,
    errorCode: undefined,
    inputTokens: undefined,
    outputTokens: undefined,
    cacheReadTokens: undefined,
    cacheWriteTokens: undefined,
    cacheWrite1hTokens: undefined,
    webSearches: undefined,
    serviceTier: undefined,
    inferenceGeo: undefined,
    images: undefined,
    imageInputTokens: undefined,
    imageOutputTokens: undefined,
    costNano: undefined,
    latencyMs: 0,
    attempts: undefined,
    clientIp: undefined,
    keyPrefix: undefined,
    upstreamLatencyMs: undefined,
    ttfbMs: undefined,
  };
}

/** A `{name}` of the endpoint's path, percent-decoded. A malformed escape (%E0%A4%A) names nothing: it is kept as sent (a 404 for a model id, not a 500). */
export function pathParam(c: OpenCall, name: string): string {
  const raw = c.endpoint?.pattern.exec(c.pathname)?.groups?.[name] ?? "";
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** A JSON answer, every handler's success body; `T` is its schema's type (api-schemas.ts) where it has one, so the body cannot drift from it. */
export const json = <T = unknown>(data: T, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(data), { status, headers: { "content-type": "application/json", ...headers } });
