// A scriptable upstream for integration tests and benchmarks: a real loopback HTTP server that
// answers POST /v1/messages (Anthropic) and POST /v1/chat/completions, /v1/images/generations,
// /v1/images/edits (OpenAI) in the vendors' wire formats, records every request, and misbehaves
// on demand (errors, drops, hangs, broken or slow streams).
//
//   await using up = await startMockUpstream();
//   up.script({ kind: "text", text: "hi" });          // next request only (FIFO), then the default
//   new Anthropic({ baseURL: up.url }); new OpenAI({ baseURL: up.openaiURL });
import {
  anthropicErrorEvent, anthropicEvents, anthropicMessage, defaultErrorBody, openaiCompletion,
  openaiErrorEvent, openaiEvents, randomId, type Answer, type StopReason, type Usage,
} from "./mock-dialects.ts";
import { imageRequest, imagesResponse, type MockFile } from "./mock-images.ts";

export { anthropicError, openaiError, splitText, type StopReason } from "./mock-dialects.ts";
export { encodePng, readPngSize, crc32, type MockFile } from "./mock-images.ts";

/** Neutral token counts; see `Usage` in mock-dialects.ts for how each maps to the two dialects. */
export type UsageOverride = Partial<Usage>;

interface ContentOptions {
  /** or computed from the request body (a prompt-cache model: tests/support/prompt-cache.ts) */
  usage?: UsageOverride | ((body: Record<string, unknown>) => UsageOverride);
  /** split text (and thinking) into this many deltas; default one per word */
  chunks?: number;
  /** pause between SSE events (overrides the server's paceMs) */
  delayMs?: number;
  /** either vocabulary; mapped to the other dialect (end_turn ⇄ stop, tool_use ⇄ tool_calls, …) */
  stopReason?: StopReason;
  stopSequence?: string;
  /** default: the request's model */
  model?: string;
}
export type TextBehaviour = { kind: "text"; text: string } & ContentOptions;
export type ToolCallsBehaviour = {
  kind: "tool_calls";
  calls: { id?: string; name: string; arguments: Record<string, unknown> }[];
  text?: string;
  /** fragments per call's JSON arguments (default 3) */
  argChunks?: number;
} & ContentOptions;
export type ThinkingBehaviour = { kind: "thinking"; thinking: string; text: string } & ContentOptions;
export type ContentBehaviour = TextBehaviour | ToolCallsBehaviour | ThinkingBehaviour;

export type Behaviour =
  | ContentBehaviour
  /** body default: the vendor's usual body for the status (dialect of the route hit) */
  | { kind: "error"; status: number; body?: object | string; headers?: Record<string, string> }
  /** reset the connection before any byte: the client sees a connection error */
  | { kind: "drop_before_headers" }
  /** answer nothing for ms, then `then` (default: drop the connection) */
  | { kind: "hang"; ms: number; then?: Behaviour }
  /** stream the first `afterEvents` SSE events of `content` (default: DEFAULT_BEHAVIOUR; Anthropic's
   *  3rd event is the ping), then reset the connection or send the vendor's mid-stream error event.
   *  Bun sends headers with the first body byte, so "drop" after 0 events looks like
   *  drop_before_headers. Non-stream requests: "drop" sends half of the JSON body then resets;
   *  "error_event" answers 529 (Anthropic) / 503 (OpenAI) with the vendor's error body. */
  | { kind: "fail_mid_stream"; afterEvents: number; mode: "drop" | "error_event"; content?: ContentBehaviour }
  /** `events` text deltas, intervalMs apart; non-stream requests wait events × intervalMs */
  | { kind: "slow_stream"; events: number; intervalMs: number }
  /** image routes: override n / size / usage (false: omit usage) */
  | { kind: "images"; n?: number; size?: string; usage?: Record<string, unknown> | false }
  | { kind: "raw"; status?: number; headers?: Record<string, string>; body?: string | object | Uint8Array };

/** completed: the whole response was written; aborted: the client went away first;
 *  dropped: the mock reset the connection on purpose. */
export type Outcome = "pending" | "completed" | "aborted" | "dropped";

export interface RecordedRequest {
  method: string;
  /** pathname + query, e.g. "/v1/messages?beta=true" */
  path: string;
  /** "POST /v1/messages": the key of `hits` */
  route: string;
  /** lowercased names; repeated headers joined with ", " */
  headers: Record<string, string>;
  /** parsed JSON; multipart → fields (files as MockFile, "x[]" fields always arrays); else text;
   *  undefined when empty */
  body: unknown;
  rawBody: string;
  /** what answered it; null for unknown routes */
  behaviour: Behaviour | null;
  outcome: Outcome;
  /** the client went away before the response finished */
  aborted: boolean;
  /** resolves once the outcome is known */
  settled: Promise<Outcome>;
  receivedAt: number;
}

export interface MockUpstreamOptions {
  /** pause between SSE events for every stream (LLM-like pacing in benchmarks); default 0 */
  paceMs?: number;
  default?: Behaviour;
}

export interface MockUpstream extends AsyncDisposable {
  /** "http://127.0.0.1:<port>": the Anthropic base URL */
  readonly url: string;
  /** url + "/v1": the OpenAI base URL */
  readonly openaiURL: string;
  readonly port: number;
  readonly requests: RecordedRequest[];
  /** requests per route, e.g. hits["POST /v1/messages"] */
  readonly hits: Record<string, number>;
  /** scripted behaviours not consumed yet */
  readonly pending: number;
  /** queue behaviours for the next requests to model routes, in order */
  script(...behaviours: Behaviour[]): void;
  setDefault(behaviour: Behaviour): void;
  /** forget requests, hits and the queue; restore the initial default */
  reset(): void;
  stop(): Promise<void>;
}

export const DEFAULT_BEHAVIOUR: TextBehaviour = { kind: "text", text: "Hello from the mock upstream." };

type Dialect = "anthropic" | "openai";
type RouteKind = "messages" | "chat" | "images";

const ROUTES: Record<string, RouteKind> = {
  "POST /v1/messages": "messages",
  "POST /v1/chat/completions": "chat",
  "POST /v1/images/generations": "images",
  "POST /v1/images/edits": "images",
};

interface Ctx {
  dialect: Dialect;
  kind: RouteKind;
  body: Record<string, unknown>;
  bodyBytes: number;
  stream: boolean;
  /** aborts when the client goes away, the stream is cancelled or the server stops */
  gone: AbortController;
  settle(o: Outcome): void;
  paceMs: number;
}

const enc = new TextEncoder();
const tokens = (chars: number): number => Math.max(1, Math.ceil(chars / 4));

/** Resolves true after ms, or false as soon as signal aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (ok: boolean) => { clearTimeout(t); signal.removeEventListener("abort", onAbort); resolve(ok); };
    const onAbort = () => done(false);
    const t = setTimeout(() => done(true), ms);
    signal.addEventListener("abort", onAbort);
  });
}

// Erroring the body with `undefined` makes Bun reset the socket without logging anything; before
// the first byte the client gets ECONNRESET instead of a status line.
const dropResponse = (): Response => new Response(new ReadableStream({ start(c) { c.error(); } }));

export async function startMockUpstream(options: MockUpstreamOptions = {}): Promise<MockUpstream> {
  const initialDefault = options.default ?? DEFAULT_BEHAVIOUR;
  let fallback = initialDefault;
  let queue: Behaviour[] = [];
  const requests: RecordedRequest[] = [];
  const hits: Record<string, number> = {};
  const live = new Set<AbortController>(); // aborted by stop(), so hangs and paced streams end

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0, // hangs and slow streams must outlive Bun's 10 s default
    async fetch(req) {
      const url = new URL(req.url);
      const route = `${req.method} ${url.pathname}`;
      hits[route] = (hits[route] ?? 0) + 1;
      const bytes = new Uint8Array(await req.arrayBuffer());
      const { promise: settled, resolve } = Promise.withResolvers<Outcome>();
      const rec: RecordedRequest = {
        method: req.method, path: url.pathname + url.search, route,
        headers: Object.fromEntries(req.headers), body: undefined, rawBody: new TextDecoder().decode(bytes),
        behaviour: null, outcome: "pending", aborted: false, settled, receivedAt: Date.now(),
      };
      rec.body = await parseBody(bytes, req.headers.get("content-type") ?? "");
      requests.push(rec);
      const gone = new AbortController();
      live.add(gone);
      const settle = (o: Outcome) => {
        if (rec.outcome !== "pending") return;
        rec.outcome = o;
        rec.aborted = o === "aborted";
        live.delete(gone);
        resolve(o);
        if (o !== "completed") gone.abort();
      };
      req.signal.addEventListener("abort", () => settle("aborted"));

      const kind = ROUTES[route];
      const dialect: Dialect = url.pathname.startsWith("/v1/messages") ? "anthropic" : "openai";
      if (req.method === "HEAD" && url.pathname === "/") { settle("completed"); return new Response(null); }
      if (kind === undefined) {
        settle("completed");
        return jsonResponse(dialect, 404, defaultErrorBody(dialect, 404));
      }
      const behaviour = queue.shift() ?? fallback;
      rec.behaviour = behaviour;
      const body = isObject(rec.body) ? rec.body : {};
      const ctx: Ctx = {
        dialect, kind, body, bodyBytes: bytes.length, stream: body.stream === true,
        gone, settle, paceMs: options.paceMs ?? 0,
      };
      return run(behaviour, ctx);
    },
    error(e) {
      console.error("mock upstream crashed:", e);
      return Response.json({ error: { message: `mock upstream crashed: ${e.message}`, type: "server_error" } }, { status: 500 });
    },
  });

  const port = server.port!;
  const stop = async () => {
    for (const g of live) g.abort();
    await server.stop(true);
  };
  return {
    url: `http://127.0.0.1:${port}`,
    openaiURL: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    hits,
    get pending() { return queue.length; },
    script: (...b) => { queue.push(...b); },
    setDefault: (b) => { fallback = b; },
    reset: () => {
      requests.length = 0;
      for (const k of Object.keys(hits)) delete hits[k];
      queue = [];
      fallback = initialDefault;
    },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

async function run(b: Behaviour, ctx: Ctx): Promise<Response> {
  switch (b.kind) {
    case "error": {
      const body = b.body ?? defaultErrorBody(ctx.dialect, b.status);
      ctx.settle("completed");
      // An overload rests the gateway's key for its Retry-After (30 s without one). "0" by default
      // here: a scripted overload moves that request on without benching the mock's key for the
      // tests after it. Tests of the rest itself set their own header.
      const headers = b.status === 429 || b.status === 529 ? { "retry-after": "0", ...b.headers } : b.headers;
      return typeof body === "string"
        ? new Response(body, { status: b.status, headers: { "content-type": "text/plain; charset=utf-8", ...idHeader(ctx.dialect), ...headers } })
        : jsonResponse(ctx.dialect, b.status, body, headers);
    }
    case "raw": {
      ctx.settle("completed");
      const isJson = b.body !== undefined && typeof b.body === "object" && !(b.body instanceof Uint8Array);
      const headers = { ...(isJson ? { "content-type": "application/json" } : {}), ...b.headers };
      return new Response(isJson ? JSON.stringify(b.body) : (b.body as string | Uint8Array | undefined), { status: b.status ?? 200, headers });
    }
    case "drop_before_headers":
      ctx.settle("dropped");
      return dropResponse();
    case "hang": {
      if (!(await sleep(b.ms, ctx.gone.signal))) { ctx.settle("aborted"); return dropResponse(); }
      if (b.then) return run(b.then, ctx);
      ctx.settle("dropped");
      return dropResponse();
    }
    case "images":
      return ctx.kind === "images"
        ? images(ctx, b)
        : mockError(ctx, "the images behaviour only answers /v1/images/* routes");
  }
  if (ctx.kind === "images") return images(ctx);
  switch (b.kind) {
    case "slow_stream": {
      const text = Array.from({ length: b.events }, (_, i) => `tick${i} `).join("");
      const content: TextBehaviour = { kind: "text", text, chunks: b.events, delayMs: b.intervalMs };
      if (!ctx.stream && !(await sleep(b.events * b.intervalMs, ctx.gone.signal))) {
        ctx.settle("aborted");
        return dropResponse();
      }
      return answer(content, ctx);
    }
    case "fail_mid_stream": {
      const content = b.content ?? DEFAULT_BEHAVIOUR;
      const a = toAnswer(content, ctx);
      if (!ctx.stream) {
        if (b.mode === "error_event") {
          const status = ctx.dialect === "anthropic" ? 529 : 503;
          ctx.settle("completed");
          // Retry-After 0 as for the "error" behaviour: the overload moves this request on, benching nothing.
          return jsonResponse(ctx.dialect, status, defaultErrorBody(ctx.dialect, status), { "retry-after": "0" });
        }
        const json = JSON.stringify(ctx.dialect === "anthropic" ? anthropicMessage(a) : openaiCompletion(a));
        return streamed(ctx, [json.slice(0, json.length >> 1)], 0, "drop", "application/json");
      }
      const frames = (ctx.dialect === "anthropic" ? anthropicEvents(a) : openaiEvents(a)).slice(0, b.afterEvents);
      if (b.mode === "error_event") frames.push(ctx.dialect === "anthropic" ? anthropicErrorEvent() : openaiErrorEvent());
      return streamed(ctx, frames, content.delayMs ?? ctx.paceMs, b.mode === "drop" ? "drop" : "close");
    }
    default:
      return answer(b, ctx);
  }
}

function answer(b: ContentBehaviour, ctx: Ctx): Response {
  const a = toAnswer(b, ctx);
  if (ctx.stream) {
    const frames = ctx.dialect === "anthropic" ? anthropicEvents(a) : openaiEvents(a);
    return streamed(ctx, frames, b.delayMs ?? ctx.paceMs, "close");
  }
  ctx.settle("completed");
  return jsonResponse(ctx.dialect, 200, ctx.dialect === "anthropic" ? anthropicMessage(a) : openaiCompletion(a));
}

function toAnswer(b: ContentBehaviour, ctx: Ctx): Answer {
  const anthropic = ctx.dialect === "anthropic";
  const thinking = b.kind === "thinking" ? b.thinking : undefined;
  const text = b.text;
  const calls = b.kind === "tool_calls"
    ? b.calls.map((c) => ({ id: c.id ?? randomId(anthropic ? "toolu_mock" : "call_mock"), name: c.name, arguments: c.arguments }))
    : [];
  const outChars = (text ?? "").length + (thinking ?? "").length
    + calls.reduce((n, c) => n + c.name.length + JSON.stringify(c.arguments).length, 0);
  const reasoning = thinking === undefined ? 0 : tokens(thinking.length);
  const usage: Usage = {
    input: tokens(ctx.bodyBytes), output: tokens(outChars), cacheRead: 0, cacheWrite: 0, reasoning,
    ...(typeof b.usage === "function" ? b.usage(ctx.body) : b.usage),
  };
  const streamOptions = ctx.body.stream_options;
  return {
    id: randomId(anthropic ? "msg_mock" : "chatcmpl-mock"),
    model: b.model ?? (typeof ctx.body.model === "string" ? ctx.body.model : "mock-model"),
    thinking, text, calls,
    stopReason: b.stopReason ?? (calls.length > 0 ? "tool_use" : b.stopSequence !== undefined ? "stop_sequence" : "end_turn"),
    stopSequence: b.stopSequence ?? null,
    usage,
    chunks: b.chunks,
    argChunks: b.kind === "tool_calls" ? (b.argChunks ?? 3) : 3,
    includeUsage: isObject(streamOptions) && streamOptions.include_usage === true,
  };
}

/** Writes frames one per pull (delayMs apart), then closes or resets the connection. */
function streamed(ctx: Ctx, frames: string[], delayMs: number, end: "close" | "drop", type = "text/event-stream; charset=utf-8"): Response {
  const signal = ctx.gone.signal;
  let i = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(c) {
      if (i > 0 && i < frames.length && delayMs > 0 && !(await sleep(delayMs, signal))) return;
      if (signal.aborted) return;
      if (i < frames.length) {
        // Unpaced: one write for the lot (benchmarks); paced: one event per write.
        const n = delayMs > 0 ? 1 : frames.length - i;
        c.enqueue(enc.encode(frames.slice(i, i + n).join("")));
        i += n;
        return;
      }
      if (end === "close") { ctx.settle("completed"); c.close(); return; }
      ctx.settle("dropped");
      // Let the sent events reach the gateway before the reset: a reset can discard what its socket
      // buffered but had not read yet, and 5 ms was too short on a loaded CI machine.
      await Bun.sleep(50);
      c.error();
    },
    cancel() { ctx.settle("aborted"); },
  });
  const headers: Record<string, string> = { "content-type": type, ...idHeader(ctx.dialect) };
  if (type.startsWith("text/event-stream")) headers["cache-control"] = "no-cache";
  return new Response(body, { status: 200, headers });
}

function images(ctx: Ctx, b?: Extract<Behaviour, { kind: "images" }>): Response {
  const result = imagesResponse(imageRequest(ctx.body, b), b?.usage);
  ctx.settle("completed");
  return result.ok
    ? jsonResponse("openai", 200, result.body)
    : jsonResponse("openai", 400, { error: { message: result.message, type: "invalid_request_error", param: result.param, code: null } });
}

function mockError(ctx: Ctx, message: string): Response {
  ctx.settle("completed");
  const body = ctx.dialect === "anthropic"
    ? { type: "error", error: { type: "api_error", message: `mock: ${message}` } }
    : { error: { message: `mock: ${message}`, type: "server_error", param: null, code: null } };
  return jsonResponse(ctx.dialect, 500, body);
}

const idHeader = (d: Dialect): Record<string, string> =>
  d === "anthropic" ? { "request-id": randomId("req_mock") } : { "x-request-id": randomId("req_mock") };

function jsonResponse(d: Dialect, status: number, body: unknown, headers?: Record<string, string>): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...idHeader(d), ...headers },
  });
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

async function parseBody(bytes: Uint8Array, contentType: string): Promise<unknown> {
  if (bytes.length === 0) return undefined;
  if (contentType.startsWith("multipart/form-data")) {
    const form = await new Response(bytes, { headers: { "content-type": contentType } }).formData();
    const out: Record<string, unknown> = {};
    for (const [k, v] of form) {
      const val: string | MockFile = typeof v === "string"
        ? v
        : { filename: v.name, type: v.type, size: v.size, bytes: new Uint8Array(await v.arrayBuffer()) };
      const prev = out[k];
      if (k.endsWith("[]")) out[k] = [...((prev as unknown[] | undefined) ?? []), val];
      else out[k] = prev === undefined ? val : [prev, val].flat();
    }
    return out;
  }
  const text = new TextDecoder().decode(bytes);
  try { return JSON.parse(text); } catch { return text; }
}
