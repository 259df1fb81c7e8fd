import { estimatedUsage } from "../dialects/stream-usage.ts";
import type { Model } from "../catalog/catalog.ts";
import type { RelayCall } from "./context.ts";
import type { Hold } from "../ledger/ledger.ts";
import { tokenCost, type TokenUsage } from "../core/money.ts";
import { SseParser, type SseEvent } from "../wire/sse.ts";
import type { StreamAdapter } from "./adapters.ts";
import type { Dialect } from "../dialects/dialect.ts";
import type { Attempt } from "./routes.ts";
import { post } from "./charge.ts";
import { describe, events } from "../logs/events.ts";

interface ChunkReader {
  read(): Promise<{ done: boolean; value?: Uint8Array }>;
  cancel(reason?: unknown): Promise<void>;
}

interface Prefetch {
  reader: ChunkReader;
  parser: SseParser;
  events: SseEvent[];
  ended: boolean;
}

const prefetched = new WeakMap<Attempt, Prefetch>();

/**
 * Reads until the first event of the answer (pings aside) and checks that it opens the dialect's
 * answer. A route that drops, closes, or opens with an error or with events that are not its dialect's
 * has not sent the client anything yet, so the relay may still fall back to the next route, or answer
 * 502 before the first byte (spec Rules 8), instead of a 200 stream that can only fail.
 */
export async function firstEvents(a: Attempt, upstream: Dialect): Promise<void> {
  const reader: ChunkReader = a.response.body!.getReader();
  const parser = new SseParser();
  const p: Prefetch = { reader, parser, events: [], ended: false };
  let opening: SseEvent | undefined;
  while (!opening) {
    const { done, value } = await reader.read();
    if (done) {
      p.events.push(...parser.end());
      p.ended = true;
    } else p.events.push(...parser.push(value!));
    opening = p.events.find((ev) => ev.event !== "ping");
    if (!opening && p.ended) throw new Error("upstream closed the stream before the first event");
  }
  const why = notAnOpening(upstream, opening);
  if (why) throw new Error(why);
  prefetched.set(a, p);
}

/** Why this first event does not open a `dialect` answer, or null when it does. Never quotes content. */
function notAnOpening(dialect: Dialect, ev: SseEvent): string | null {
  if (ev.event === "error") return "the upstream's stream opened with an error event";
  let data: unknown;
  try {
    data = JSON.parse(ev.data);
  } catch {
    return "the upstream's first event is not JSON";
  }
  if (!data || typeof data !== "object" || Array.isArray(data)) return "the upstream's first event is not a JSON object";
  const d = data as Record<string, unknown>;
  if (d.error !== undefined) return "the upstream's stream opened with an error";
  if (dialect === "messages") return ev.event === "message_start" || d.type === "message_start" ? null : "the upstream's stream does not open with message_start";
  return Array.isArray(d.choices) ? null : "the upstream's first event is not a chat completion chunk";
}

const KEEPALIVE_MS = 15_000;

type Outcome = "completed" | "upstream_failed" | "cancelled";

/** The upstream's own last event: the answer is complete once it is forwarded, whether or not the connection closes. */
const isTerminal = (upstream: Dialect, ev: SseEvent) => (upstream === "messages" ? ev.event === "message_stop" : ev.data === "[DONE]");

/**
 * Streams the upstream's events to the client through the adapter, chunk by chunk as they arrive
 * (pull-based, so a slow client slows the upstream read instead of growing a buffer). The stream owns
 * the request's hold from here and resolves it exactly once (`finish`, reached from every ending):
 * - the final usage event (the one carrying cost_usd) waits for its charge to commit, so a crash
 *   never loses the charge of an answer the client saw complete, and the charge is the cost shown;
 * - the upstream failed: nothing is charged;
 * - the client cancelled: input plus the output delivered so far (billing rules, docs/database.md).
 */
export function relayStream(
  call: RelayCall,
  a: Attempt,
  adapter: StreamAdapter,
  hold: Hold,
  model: Model,
  estimatedInputTokens: number,
  upstream: Dialect,
  extraHeaders: Record<string, string>,
): Response {
  const p = prefetched.get(a)!;
  const enc = new TextEncoder();
  // Both SDKs skip these: Messages parses and drops `ping`; a `:` line is an SSE comment.
  const keepAlive = call.log.endpoint === "messages" ? 'event: ping\ndata: {"type":"ping"}\n\n' : ": keep-alive\n\n";
  let settled = false;
  let terminal = false;
  let chargeFailed = false;
  // A stop's deadline (server.ts drain) cuts the upstream; the read below then fails and the client
  // gets its dialect's error event. Listened to only while the stream runs.
  // attemptRoutes left the call held by the cutoff; the stream lets it go when it ends.
  const cutoff = call.svc.cutoff;
  const costOf = (u: TokenUsage) => tokenCost(model.prices, u);

  /** The one place the hold resolves (if the final usage event has not posted it already). */
  const finish = async (outcome: Outcome): Promise<void> => {
    if (settled) return;
    settled = true;
    clearInterval(keepAliveTimer);
    cutoff.release(a.abort);
    if (adapter.upstreamError) cutMidStream("the upstream sent an error event mid-stream");
    if (!hold.open) return;
    if (outcome === "upstream_failed") {
      hold.void("upstream_failed");
      call.log.errorCode = cutoff.aborted ? "shutdown" : "upstream_unavailable";
      call.log.costNano = 0;
      return writeLogAlone();
    }
    if (outcome === "cancelled") call.log.errorCode = "client_cancelled";
    const billed = outcome === "cancelled" ? deliveredUsage(adapter, estimatedInputTokens) : (adapter.usage ?? estimatedUsage(estimatedInputTokens, adapter.outputChars));
    try {
      await post(call, hold, costOf(billed), billed, 200);
    } catch (e) {
      // Not charged (the write rolled back and the hold went): the answer has gone out free. One
      // event line, not a rethrow (Bun prints a stack per failed stream); the row alone records it.
      events.writeFailed("ledger", call.requestId, e);
      await writeLogAlone();
    }
  };
  const writeLogAlone = () => {
    call.log.latencyMs = performance.now() - call.started;
    return call.svc.logs.writeBatched(call.svc.commits, call.log);
  };

  const cutMidStream = (reason: string) =>
    events.upstreamFailed({ requestId: call.requestId, route: a.route.key, provider: a.route.provider.id, reason });

  let quiet = false;
  let keepAliveTimer: ReturnType<typeof setInterval> | undefined;
  /** Sends the adapter's text for these events; true when any was sent. */
  const emit = async (evs: SseEvent[], c: ReadableStreamDefaultController<Uint8Array>): Promise<boolean> => {
    let out = "";
    let sent = false;
    for (const ev of evs) {
      const piece = adapter.push(ev);
      if (isTerminal(upstream, ev)) terminal = true;
      // The final usage event (only it carries cost_usd) leaves once its charge is durable.
      if (hold.open && piece.includes('"cost_usd":')) {
        if (out) c.enqueue(enc.encode(out));
        out = "";
        sent = true;
        if (!(await chargeFinal(c))) return true;
      }
      out += piece;
    }
    if (out) {
      c.enqueue(enc.encode(out));
      sent = true;
    }
    if (sent) quiet = false;
    return sent;
  };
  /** Enqueues text that may carry the final usage (the adapter's own ending), after its charge. */
  const deliver = async (out: string, c: ReadableStreamDefaultController<Uint8Array>): Promise<void> => {
    if (!out) return;
    if (hold.open && out.includes('"cost_usd":') && !(await chargeFinal(c))) return;
    c.enqueue(enc.encode(out));
  };
  /** Posts the answer's cost; false when it could not be committed (then the client gets an error event instead, free). */
  const chargeFinal = async (c: ReadableStreamDefaultController<Uint8Array>): Promise<boolean> => {
    const billed = adapter.usage ?? estimatedUsage(estimatedInputTokens, adapter.outputChars);
    try {
      await post(call, hold, costOf(billed), billed, 200);
      return true;
    } catch (e) {
      chargeFailed = true;
      events.writeFailed("ledger", call.requestId, e);
      call.log.errorCode = "database_unavailable";
      call.log.costNano = 0;
      send(adapter.fail("api_error", "The gateway could not record the charge of this answer; it was not charged. Retry it."), c);
      await writeLogAlone();
      return false;
    }
  };
  const send = (text: string, c: ReadableStreamDefaultController<Uint8Array>) => {
    if (text) c.enqueue(enc.encode(text));
  };

  /** The upstream's answer is over (EOF, or its own last event): the dialect's ending, then finish. */
  const ended = async (c: ReadableStreamDefaultController<Uint8Array>): Promise<void> => {
    await emit(p.parser.end(), c);
    if (chargeFailed || adapter.upstreamError) return end(c, "upstream_failed");
    if (!adapter.complete) {
      // EOF without the dialect's ending: the upstream dropped us mid-answer.
      cutMidStream("stream ended before the dialect's final event");
      send(adapter.fail("api_error", "The upstream stream ended early; this request was not charged."), c);
      return end(c, "upstream_failed");
    }
    await deliver(adapter.done(), c);
    return end(c, chargeFailed ? "upstream_failed" : "completed");
  };

  const body = new ReadableStream<Uint8Array>({
    async start(c) {
      // Silence upstream (a long thinking phase): a ping after a quiet period keeps proxies and clients from timing out.
      keepAliveTimer = setInterval(() => {
        if (quiet && !settled) c.enqueue(enc.encode(keepAlive));
        quiet = true;
      }, KEEPALIVE_MS);
      try {
        await emit(p.events.splice(0), c);
        if (chargeFailed || adapter.upstreamError) return end(c, "upstream_failed");
        if (terminal) return ended(c);
      } catch (e) {
        return fail(c, e);
      }
    },
    // Reads until something is sent or the stream ends: a pull that enqueues nothing is not called again.
    async pull(c) {
      try {
        while (!settled) {
          let chunk: { done: boolean; value?: Uint8Array };
          try {
            chunk = p.ended ? { done: true } : await p.reader.read();
          } catch (e) {
            // The client went away meanwhile (cancel aborted the upstream read): finish has run.
            if (settled) return;
            if (!cutoff.aborted) cutMidStream(`stream cut mid-way: ${describe(e)}`);
            const why = cutoff.aborted
              ? "The gateway is shutting down; this request was not charged. Retry it."
              : "The upstream connection failed mid-stream; this request was not charged.";
            send(adapter.fail("api_error", why), c);
            return end(c, "upstream_failed");
          }
          if (chunk.done) return ended(c);
          const sent = await emit(p.parser.push(chunk.value!), c);
          if (chargeFailed || adapter.upstreamError) return end(c, "upstream_failed");
          // An upstream that keeps the connection open after its last event must not hold the answer.
          if (terminal) return ended(c);
          if (sent) return;
        }
      } catch (e) {
        return fail(c, e);
      }
    },
    cancel() {
      a.abort.abort(new Error("client went away"));
      p.reader.cancel().catch(() => {});
      return finish("cancelled");
    },
  });

  /** Anything unexpected (a bug, an adapter that throws): the stream ends as a failure, free. */
  async function fail(c: ReadableStreamDefaultController<Uint8Array>, e: unknown): Promise<void> {
    events.gatewayError({ requestId: call.requestId, status: 500, code: "internal_error", cause: e, route: a.route.key, provider: a.route.provider.id });
    try {
      send(adapter.fail("api_error", "The gateway failed mid-stream; this request was not charged."), c);
    } catch {
      // the adapter itself is what failed
    }
    await end(c, "upstream_failed");
  }

  async function end(c: ReadableStreamDefaultController<Uint8Array>, outcome: Outcome): Promise<void> {
    await finish(outcome);
    try {
      c.close();
    } catch {
      // already closed by a cancel that raced the end
    }
    if (outcome !== "completed") a.abort.abort(new Error("stream ended"));
    p.reader.cancel().catch(() => {});
  }

  const headers: Record<string, string> = {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    connection: "keep-alive",
    "x-accel-buffering": "no",
    ...extraHeaders,
  };
  return new Response(body, { headers });
}

/**
 * What a cancelled stream is billed: input (the upstream's count, else our estimate) plus the output
 * delivered so far. An upstream's running output count (message_start's `output_tokens: 1`) is a
 * floor, not the answer: the characters delivered after it count too.
 */
export function deliveredUsage(adapter: Pick<StreamAdapter, "usage" | "outputChars">, estimatedInputTokens: number): TokenUsage {
  const u = adapter.usage;
  return {
    input: u ? u.input : estimatedInputTokens,
    output: Math.max(u?.output ?? 0, Math.ceil(adapter.outputChars / 4)),
    cacheRead: u?.cacheRead ?? 0,
    cacheWrite: u?.cacheWrite ?? 0,
  };
}
