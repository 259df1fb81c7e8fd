import type { Model, Route } from "../catalog/catalog.ts";
import type { Provider } from "../upstreams/types.ts";
import { findNonTextContent, unsupportedContent } from "../dialects/content-check.ts";
import { droppedList, isObject } from "../dialects/fields.ts";
import type { JsonObject } from "../wire/shapes.ts";
import type { TokenUsage } from "../core/money.ts";
import type { MemberText } from "../wire/member-text.ts";
import { GatewayError, modelNotFound } from "../core/errors.ts";
import type { RelayCall } from "./context.ts";
import { estimateInputTokens, TextCount } from "../ledger/estimate.ts";

import { priceUsage } from "../catalog/prices.ts";
import { asksFast, gatewayMayCache, holdNano } from "./hold-size.ts";
import type { Dialect } from "../dialects/dialect.ts";
import { chatUsage, fullMessagesUsage } from "../dialects/usage.ts";
import { estimatedUsage } from "../dialects/stream-usage.ts";
import type { StreamMachine } from "../dialects/stream-machine.ts";
import { answerUsage, clientBody, streamMachine, upstreamBody, withCost, NOTHING_DROPPED, type PairOptions, type UpstreamBody } from "./adapters.ts";
import { attemptRoutes, readJsonAnswer, type Attempt, type AttemptHooks, type WholeAnswer } from "./routes.ts";
import { relayStream, firstEvents, type Opening } from "./stream.ts";
import { bodySizeOf, charged, commitCharge, reserve } from "./charge.ts";

const ENDPOINT: Record<Dialect, "messages" | "chat.completions"> = { messages: "messages", chat: "chat.completions" };

/** Model name → catalog model sold on this endpoint and allowed for this key, or its documented refusal (docs/api.md#errors). */
/** `route` names the dialect asked for when it differs from what is sold (responses rides on chat.completions). */
export function resolveModel(call: RelayCall, name: unknown, endpoint: Model["endpoints"][number], route: string = endpoint): Model {
  const model = typeof name === "string" ? call.svc.catalog.lookup(name) : undefined;
  if (!model) throw modelNotFound(String(name));
  call.log.model = model.id;
  call.log.endpoint = route;
  if (!model.endpoints.includes(endpoint)) {
    throw new GatewayError(
      "model_protocol_mismatch",
      `The model '${model.id}' is not served on ${route}; it is sold on: ${model.endpoints.join(", ")}.`,
    );
  }
  if (call.key.models && !allowedOn(call.key.models, call.svc.catalog, model.id)) {
    throw new GatewayError("model", `This API key is not allowed to use the model '${model.id}'.`);
  }
  return model;
}

/**
 * Whether a key's model list names the model (by id or alias). A loop, not `some` with an arrow:
 * the arrow's captures cost resolveModel three scope objects on every request, listed or not (bench/RESULTS.md).
 */
function allowedOn(models: readonly string[], catalog: RelayCall["svc"]["catalog"], id: string): boolean {
  for (const m of models) if (catalog.lookup(m)?.id === id) return true;
  return false;
}

/** The output cap a request asks for; the reservation is sized on it. */
function outputCap(dialect: Dialect, body: JsonObject): number {
  if (dialect === "messages") return body.max_tokens as number;
  // Both given: upstreams differ in which one they honour, so the reservation covers the larger.
  const a = body.max_completion_tokens;
  const b = body.max_tokens;
  if (typeof a === "number") return typeof b === "number" ? Math.max(a, b) : a;
  if (typeof b === "number") return b;
  throw new GatewayError("invalid_request", "max_tokens: Field required (or max_completion_tokens)");
}

const ANTHROPIC_VERSION = /^\d{4}-\d{2}-\d{2}$/;

/**
 * POST /v1/messages and /v1/chat/completions after the pipeline's checks. Not async: relayText's
 * promise is handed on as it is (an async function resolving to a promise costs two more turns);
 * its refusals throw where the pipeline awaits it, which rejects the same.
 */
export function serveText(call: RelayCall, dialect: Dialect, body: JsonObject): Promise<Response> {
  const model = resolveModel(call, body.model, ENDPOINT[dialect]);
  if (dialect === "messages") {
    const v = call.request.headers.get("anthropic-version");
    if (v !== null && !ANTHROPIC_VERSION.test(v.trim())) {
      throw new GatewayError("invalid_request", `anthropic-version: '${v}' is not a version date of the form YYYY-MM-DD (e.g. 2023-06-01).`);
    }
  }
  // Anything but 1 (absent, null): "5" as text is read as 5 by upstreams that coerce (pydantic).
  if (dialect === "chat" && body.n !== undefined && body.n !== null && body.n !== 1) {
    throw new GatewayError("invalid_request", "n: only n = 1 is supported; each choice is billed and streamed separately upstream.");
  }
  const hit = findNonTextContent(dialect, body);
  if (hit) throw unsupportedContent(hit);
  refuseUnpricedFast(model, body);
  const includeUsage = dialect === "chat" && (body.stream_options as JsonObject | undefined)?.include_usage === true;
  return relayText(call, model, new TextClient(dialect, body, call.bytes, outputCap(dialect, body), body.stream === true, includeUsage));
}

/**
 * Fast mode is billed by the provider at several times the standard rates (Anthropic: 6x on Opus 4.6):
 * a model with no `service_tiers.fast` table would sell it at base prices, so the request is refused
 * before any upstream call (docs/pricing.md#service-tiers).
 */
function refuseUnpricedFast(model: Model, body: JsonObject): void {
  if (!asksFast(body)) return;
  for (const p of model.priceTables) if (p.service.fast) return;
  const field = body.speed === "fast" ? "speed" : "service_tier";
  throw new GatewayError("invalid_request", `${field}: fast mode is not sold for the model '${model.id}' (no fast prices are configured); omit it.`);
}

/**
 * OpenAI's search models bill every Chat completion one web search call, and their usage never says
 * so (no server_tool_use): a native Chat answer to a body with web_search_options counts one search
 * when the upstream reports none (docs/pricing.md#price-classes). Set on the usage itself, so that the
 * log row records the search charged.
 */
function withImpliedSearch(u: TokenUsage): TokenUsage {
  if (!u.webSearches) u.webSearches = 1;
  return u;
}

/** A Messages or Chat client: its stream machine is a method, where a closure was made for every request, streamed or not. */
class TextClient implements ClientSide {
  constructor(
    readonly dialect: Dialect,
    readonly body: JsonObject,
    readonly raw: Uint8Array,
    readonly maxOut: number,
    readonly stream: boolean,
    private readonly includeUsage: boolean,
  ) {}

  answer(out: JsonObject, costNano: number): JsonObject {
    return withCost(out, costNano);
  }

  machine(o: PairOptions, upstream: Dialect): StreamMachine {
    return streamMachine(this.dialect, upstream, this.includeUsage, o);
  }
}

/**
 * Builds a route's body inside the route loop, where anything thrown that is not a GatewayError
 * counts as the route's failure: a body that cannot be built is this request's fault, and must not
 * open the circuit for every other account on the route (relay/health.ts).
 */
function built(client: ClientSide, upstream: Dialect, route: Route): UpstreamBody {
  try {
    return upstreamBody(client.dialect, upstream, client.body, route, client.raw);
  } catch (e) {
    if (e instanceof GatewayError) throw e;
    throw new GatewayError("internal_error", `The gateway could not build this request's body for its upstream (${(e as Error).name}); it was not sent and not charged.`);
  }
}

/** What differs between the client dialects once the request is valid. */
export interface ClientSide {
  /** Dialect of `body`: the relay sends it natively or translates it for each route. */
  dialect: Dialect;
  body: JsonObject;
  /** the client's bytes when `body` is their parse, untouched: native routes may send them spliced; or a translation's own members (adapters.ts upstreamBody) */
  raw?: Uint8Array | MemberText;
  maxOut: number;
  stream: boolean;
  /** The final JSON from the answer in `dialect` and the settled cost. */
  answer(out: JsonObject, costNano: number): JsonObject;
  /** The stream machine for a route speaking `upstream`. */
  machine(o: PairOptions, upstream: Dialect): StreamMachine;
  headers?: Record<string, string>;
}

/**
 * A JSON answer's init when the relay adds no header of its own: read by each Response, never
 * changed. A Headers object, which a Response copies 0.2 to 0.25 µs cheaper than it reads a plain
 * object's keys (bench/RESULTS.md); the copy is the answer's own, so the pipeline's sets on it never
 * reach this one.
 */
const JSON_ANSWER: ResponseInit = { headers: new Headers({ "content-type": "application/json" }) };

/**
 * The answer's own headers, or undefined when there are none (a plain chat or messages answer, which
 * then builds no header object of its own). The client side may have dropped fields of its own
 * (Responses → Chat): x-gateway-dropped is then one list of both.
 */
function answerHeaders(own: Record<string, string> | undefined, dropped: readonly string[]): Record<string, string> | undefined {
  if (dropped.length === 0) return own;
  const headers: Record<string, string> = { ...own };
  const all = [own?.["x-gateway-dropped"], ...dropped].filter(Boolean);
  if (all.length) headers["x-gateway-dropped"] = droppedList(all as string[]);
  return headers;
}

/** What the route loop's confirm step reads: a stream's first events, or a plain answer whole. */
type Confirmed = Opening | WholeAnswer;

/**
 * The route loop's hooks for one text request: one object whose methods are its class's, where
 * closures made per request (and an async wrapper around each confirm) cost 11 objects more a
 * request (bench/RESULTS.md). It keeps what the last route tried speaks and what its body dropped.
 */
class TextRoute implements AttemptHooks<Confirmed> {
  upstreamDialect: Dialect;
  dropped: readonly string[] = NOTHING_DROPPED;

  constructor(
    private readonly call: RelayCall,
    private readonly client: ClientSide,
  ) {
    this.upstreamDialect = client.dialect;
  }

  send(route: Route, provider: Provider, signal: AbortSignal, apiKey: string | undefined): Promise<Response> {
    const { call, client } = this;
    const upstream = provider.dialects.includes(client.dialect) ? client.dialect : provider.dialects[0]!;
    this.upstreamDialect = upstream;
    const out = built(client, upstream, route);
    this.dropped = out.dropped;
    // The estimator learns from what the upstream counted: this body, when it is not the client's.
    call.sentSize = out.size;
    return provider.text({ dialect: upstream, body: out.body, bytes: out.bytes, clientHeaders: call.request.headers, search: call.search, signal, apiKey });
  }

  confirm(a: Attempt): Promise<Confirmed> {
    return this.client.stream ? firstEvents(a, this.upstreamDialect) : readJsonAnswer(a);
  }
}

/**
 * reserve → routes (with fallback) → answer or stream → post. The hold is this function's until a
 * stream takes it (relayStream resolves it when the stream ends); whatever else happens, the
 * `finally` voids it if nothing resolved it.
 */
export async function relayText(call: RelayCall, model: Model, client: ClientSide): Promise<Response> {
  // The plain estimate is what an answer without usage is billed; the hold's input part is sized on
  // the model's calibration instead (ledger/calibration.ts), which only ever sizes a hold.
  const body = bodySizeOf(call);
  const estimatedInputTokens = estimateInputTokens(body.bytes, body.chars);
  const heldInputTokens = call.svc.calibration.holdTokens(model.id, body.bytes, body.chars);
  const reserveNano = holdNano(model, client.body, call.bytes, heldInputTokens, client.maxOut, gatewayMayCache(model, client.dialect));
  call.log.stream = client.stream;

  const held = reserve(call, reserveNano);
  const hold = held instanceof Promise ? await held : held;
  let stream: Response | null = null;
  let attempt: Attempt<Confirmed> | undefined;
  try {
    const route = new TextRoute(call, client);
    attempt = await attemptRoutes(call.svc, model, call, route);
    const upstreamDialect = route.upstreamDialect;
    const headers = answerHeaders(client.headers, route.dropped);
    // The route that answered prices it: an unset class follows its provider's rules.
    const prices = attempt.route.prices;
    const searched = client.dialect === "chat" && upstreamDialect === "chat" && isObject(client.body.web_search_options);
    const costOf = searched ? (u: TokenUsage) => priceUsage(prices, withImpliedSearch(u)) : (u: TokenUsage) => priceUsage(prices, u);
    if (client.stream) {
      const pair: PairOptions = { model, estimatedInputTokens, costOf };
      const machine = client.machine(pair, upstreamDialect);
      stream = relayStream({ call, attempt, opening: attempt.confirmed as Opening, machine, hold, model, estimatedInputTokens, maxOut: client.maxOut, headers: headers ?? {}, costOf });
      return stream;
    }
    const { text, json } = attempt.confirmed as WholeAnswer;
    const reported = answerUsage(upstreamDialect, json);
    const out = clientBody(client.dialect, upstreamDialect, json, model.id);
    // Some compatible servers report no usage: bill our own count (estimate in, answer bytes out) and
    // show the client the counts it was billed on, in its own dialect.
    const usage = reported ?? estimatedUsage(estimatedInputTokens, TextCount.of(text));
    if (!reported) out.usage = client.dialect === "messages" ? fullMessagesUsage(usage, { serviceTier: typeof json.service_tier === "string" ? json.service_tier : undefined }) : chatUsage(usage);
    const cost = costOf(usage);
    // Serialised before the charge, so that an answer that cannot be written is never charged;
    // Response.json writes the same bytes as JSON.stringify into a Response, 0.2 to 0.7 µs cheaper (bench/RESULTS.md).
    const answer = Response.json(client.answer(out, cost), headers ? { headers: { "content-type": "application/json", ...headers } } : JSON_ANSWER);
    // The charge and the request's log row are durable before the answer leaves.
    await commitCharge(call, hold, cost, usage, 200);
    charged(call, cost, usage, reported !== null, null);
    return answer;
  } finally {
    // A stream owns its hold from here; any other ending without a post is a failure, and free.
    if (!stream) hold.close("failed");
    // A stream handed over but never relayed (its set-up threw): nothing else lets its upstream call go.
    if (!stream && client.stream && attempt) {
      attempt.abort.abort(new Error("the stream's set-up failed"));
      attempt.release();
    }
  }
}

