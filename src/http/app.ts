import { Elysia } from "elysia";
import type { Server } from "bun";
import { presentedKey } from "../auth/presented-key.ts";
import type { GatewayError } from "../core/errors.ts";
import { RefusalGate, type RefusalGateOptions } from "../limits/refusals.ts";
import { writeBatched } from "../store/request-log/contract.ts";
import { leavesBodyUnread } from "./body.ts";
import type { Services } from "../services.ts";
import { CORS_HEADERS, ENDPOINTS, endpointNotFound, endpointsAt, methodNotAllowed, preflight, SPEC_PATH, specEndpoint, type AuthKind, type Endpoint } from "./endpoints.ts";
import { errorBody, errorResponse, setRequestIdHeaders, toGatewayError } from "./errors.ts";
import { newExchange, type Exchange } from "./exchange.ts";
import { detailOf, openapiDocument } from "./openapi.ts";
import { operatorRefusal } from "./operator-guard.ts";
import { finishIdempotency } from "./idempotency.ts";
import { runKeyEndpoint } from "./pipeline.ts";
import { newDashboard, runSessionEndpoint } from "./session-guard.ts";

// The machinery over the endpoint table (endpoints.ts): Elysia's routes, a runner per kind of
// caller, the answers to paths and methods no endpoint takes, and the one place where a failure
// becomes its logged error response.

type Ctx = { request: Request; server: Server<unknown> | null };
type Run = (x: Exchange) => Response | Promise<Response>;
type Runner<A extends AuthKind> = (x: Exchange, e: Endpoint<A>) => Response | Promise<Response>;

function withRequestId(x: Exchange, response: Response): Response {
  if (x.api) setRequestIdHeaders(response.headers, x.requestId);
  return response;
}

/** Unknown paths and other methods: 404 endpoint_not_found, 405 with allow; CORS preflight and HEAD answered. */
function unrouted(x: Exchange, at: Endpoint[]): Response {
  const method = x.request.method;
  if (at.length === 0) throw endpointNotFound(method, x.pathname);
  if (method === "OPTIONS" && at[0]!.cors) return withRequestId(x, preflight(x.request, at));
  if (method === "HEAD" && at.some((e) => e.method === "GET")) {
    return withRequestId(x, new Response(null, { status: 200, headers: at[0]!.cors ? { ...CORS_HEADERS } : {} }));
  }
  throw methodNotAllowed(method, at);
}

/** The dashboard's page and its files (dashboard/page.ts, a layer above, hands it in). */
export interface DashboardPage {
  /** The page (at `/`) or one of its files for a GET or HEAD of `pathname`; null for any other request. */
  answer(request: Request, pathname: string): Promise<Response | null>;
}

/**
 * The app over the endpoint table. `page` is the dashboard's page at `/` and its files, from the
 * layer above: answered for the paths no endpoint has, before they are 404s.
 */
export function buildApp(svc: Services, gateOptions: RefusalGateOptions = {}, page: DashboardPage | null = null) {
  const gate = new RefusalGate(gateOptions);
  // The refusals of the last minute before a stop are summarised too.
  svc.atStop.push(() => gate.summarize());

  /**
   * A refusal that carries no valid key, while its address is over the refusal budget
   * (limits/refusals.ts): the 429 to answer instead, with no row. Null: answer and log as usual.
   * The key is looked up only then, so valid keys pay nothing and are never refused here.
   */
  function overBudget(x: Exchange): GatewayError | null {
    const wait = gate.waitFor(x.clientIp());
    if (wait === null) return null;
    // On PostgreSQL a key this instance has not met yet is a query away: from an address over its
    // budget of invalid keys it counts as none this once (the query, run anyway, keeps it for the retry).
    if (svc.keys.known(presentedKey(x.request.headers))) return null;
    return gate.refuse(x.clientIp(), wait);
  }

  /** An answer without a key: the endpoint's CORS, and on /v1 the request id and a log row. */
  async function opened(x: Exchange, pending: Response | Promise<Response>): Promise<Response> {
    const response = withRequestId(x, await pending);
    if (x.endpoint?.cors) for (const [k, v] of Object.entries(CORS_HEADERS)) response.headers.set(k, v);
    if (x.logged) {
      x.log.status = response.status;
      x.log.latencyMs = performance.now() - x.started;
      await svc.logs.write(x.log);
    }
    return response;
  }

  const dash = newDashboard(svc);

  /** How each kind of caller is known before its endpoint's handler runs. */
  const RUNNERS: { [A in AuthKind]: Runner<A> } = {
    public: (x, e) => opened(x, e.handler(x)),
    operator: (x, e) => {
      const refusal = operatorRefusal(x, e.path);
      if (refusal) throw refusal;
      return opened(x, e.handler(x));
    },
    key: (x, e) => {
      // Over budget, a keyless request is turned away before its body is read (limits/refusals.ts).
      const over = gate.untouched ? null : overBudget(x);
      if (over) {
        x.logged = false;
        throw over;
      }
      return runKeyEndpoint(x, e);
    },
    session: (x, e) => runSessionEndpoint(x, e, true, dash),
    visitor: (x, e) => runSessionEndpoint(x, e, false, dash),
  };
  const runnerOf = (e: Endpoint): Run => (x) => (RUNNERS[e.auth] as Runner<AuthKind>)(x, e);

  /**
   * The one catch site: anything a runner throws, from any layer, is answered here. Not async: the
   * runner's promise with a `then` costs two objects and a frame fewer a request (bench/RESULTS.md).
   */
  function answer(x: Exchange, run: Run): Response | Promise<Response> {
    let pending: Response | Promise<Response>;
    try {
      pending = run(x);
    } catch (e) {
      return accessLogged(x, failed(x, e));
    }
    if (!(pending instanceof Promise)) return accessLogged(x, pending);
    // The API's answers need no step of their own here: no function is made for them.
    const done = !x.api && svc.accessLog ? (response: Response) => accessLogged(x, response) : undefined;
    return pending.then(done, (e) => accessLogged(x, failed(x, e)));
  }

  /** Dashboard calls write no request_logs row; the access log still names each one and its client. */
  function accessLogged(x: Exchange, response: Response): Response {
    if (!x.api && svc.accessLog && x.pathname.startsWith("/api/")) {
      svc.accessLog.call({ requestId: x.requestId, method: x.request.method, path: x.pathname, status: response.status, latencyMs: performance.now() - x.started, clientIp: x.clientIp() });
    }
    return response;
  }

  /**
   * A failure as its error response: the refusal budget, the hold and the idempotency claim left
   * behind, the log row, the operator's event for a 5xx (errors.ts), CORS, the envelope and the
   * rate headers. Nothing in here may throw.
   */
  function failed(x: Exchange, thrown: unknown): Response {
    let e = toGatewayError(thrown);
    // Refusals that carry no valid key (401, 404 and 405 on /v1 before a key was accepted) spend
    // the address's refusal budget; past it they become a 429 with no row.
    if (x.logged && (e.status === 401 || ((e.status === 404 || e.status === 405) && x.log.keyId === undefined))) {
      const over = overBudget(x);
      if (over) {
        e = over;
        x.logged = false;
      } else gate.spend(x.clientIp());
    }
    // The relay's own finally has resolved it; this is the last resort should a path ever miss it.
    x.call?.hold?.close("failed");
    if (x.idem) {
      // A kept failure (an image the provider may have made) stays under its key: a retry replays it.
      const kept = e.kept ? { status: e.status, contentType: "application/json", body: errorBody(e, x.requestId, x.endpoint?.envelope), kept: true } : null;
      finishIdempotency(svc, x.idem, x.requestId, kept);
    }
    if (x.logged) {
      x.log.status = e.status;
      x.log.errorCode = e.code;
      x.log.latencyMs = performance.now() - x.started;
      // Through the group commit, which waits out another process's write lock between turns; the
      // error answer does not wait for it.
      void writeBatched(svc.commits, svc.logs, x.log);
    }
    const { log, endpoint } = x;
    const quiet = endpoint?.quiet || x.request.signal.aborted;
    const headers: Record<string, string> = endpoint?.cors ? { ...CORS_HEADERS } : endpoint?.dashboard ? { "cache-control": "no-store" } : {};
    const response = errorResponse(e, x.requestId, headers, {
      envelope: endpoint?.envelope,
      ...(quiet
        ? { quiet: true }
        : { route: log.provider && log.upstreamModel ? `${log.provider}/${log.upstreamModel}` : undefined, provider: log.provider ?? undefined, upstreamStatus: x.call?.upstreamStatus }),
    });
    if (x.rate) svc.limiter.withHeaders(response.headers, x.rate);
    if (leavesBodyUnread(x.request, e.status)) response.headers.set("connection", "close");
    return response;
  }

  // Each endpoint is registered with Elysia (its router serves `app.handle`, and the OpenAPI document
  // reads the table) and handed to Bun's own router directly, under the same path and method Elysia
  // would give it there: Elysia's handler around ours built a context object with a `server`
  // property defined per request and answered through one more promise (0.3 µs a request,
  // bench/RESULTS.md). Anything ours leaves unmatched still reaches Elysia's fetch. Each exchange
  // takes the config generation running at its start (services.ts, Live) and keeps it to its end:
  // a reload changes the requests after it, never one in flight.
  const served = ENDPOINTS.filter((e) => !e.when || e.when(svc.config)).map((e) => {
    const run = runnerOf(e);
    const handle = (request: Request, server: Server<unknown> | null) => answer(newExchange(svc.live.current(), request, server, e), run);
    return { e, path: e.path.replace(/\{(\w+)\}/g, ":$1"), handle };
  });
  const registered = [...served.map((s) => s.e), specEndpoint((x) => app.handle(new Request(new URL(SPEC_PATH, x.request.url).href)))];
  const routes: Record<string, Record<string, typeof served[number]["handle"]>> = {};
  for (const { e, path, handle } of served) (routes[encodeURI(path)] ??= {})[e.method] = handle;
  const app = new Elysia({ normalize: false, serve: { routes } as never }).use(openapiDocument(svc.version));
  // Elysia's route() registers on the instance itself; its typed return is not needed here.
  for (const { e, path, handle } of served) app.route(e.method, path, ({ request, server }: Ctx) => handle(request, server), detailOf(e));

  return app.onError(async ({ code, error, request, server }) => {
    if (code === "NOT_FOUND" && page) {
      const answered = await page.answer(request, new URL(request.url).pathname);
      if (answered) return answered;
    }
    const x = newExchange(svc.live.current(), request, server, undefined);
    const at = endpointsAt(x.pathname, registered);
    x.endpoint = at[0];
    if (code !== "NOT_FOUND") return failed(x, code === "PARSE" ? (error as Error).cause : error);
    // The router matches the target as sent; request.url is already normalised (dot segments,
    // %2e, a trailing slash). A target that normalises to a published endpoint and method is that
    // endpoint, as it is for every URL parser: /v1/../v1/messages answered a baffling "use POST" 405.
    const e = at.find((r) => r.method === request.method);
    if (!e) return answer(x, () => unrouted(x, at));
    x.endpoint = e;
    return answer(x, runnerOf(e));
  });
}
