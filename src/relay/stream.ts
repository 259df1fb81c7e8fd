import { estimatedUsage } from "../dialects/stream-usage.ts";
import type { Calibration } from "../ledger/calibration.ts";
import type { Model } from "../catalog/catalog.ts";
import type { RelayCall } from "./context.ts";
import type { Hold } from "../ledger/hold.ts";
import type { TokenUsage } from "../core/money.ts";
import { priceUsage } from "../catalog/prices.ts";
import { writeBatched } from "../store/request-log/contract.ts";
import { SseParser, type SseEvent } from "../wire/sse.ts";
import type { StreamMachine } from "../dialects/stream-machine.ts";
import type { Dialect } from "../dialects/dialect.ts";
import type { Attempt } from "./routes.ts";
import { post } from "./charge.ts";
import { describe, events } from "../core/events.ts";
import { GatewayError } from "../core/errors.ts";
import { bodyReader, type ChunkReader } from "./timeouts.ts";
import { KeepAliveSweep, type KeepAlive } from "./keepalive.ts";

/** An upstream body as firstEvents leaves it: the events read ahead, not yet relayed, and the rest to read. */
export interface Opening {
  reader: ChunkReader;
  parser: SseParser;
  events: SseEvent[];
  /** The upstream closed while it was read ahead. */
  ended: boolean;
}

/**
 * Reads until the first event of the answer (pings aside) and checks that it opens the dialect's
 * answer. A route that drops, closes, or opens with an error or with events that are not its dialect's
 * has not sent the client anything yet, so the relay may still fall back to the next route, or answer
 * 502 before the first byte (spec Rules 8), instead of a 200 stream that can only fail.
 */
export async function firstEvents(a: Attempt, upstream: Dialect): Promise<Opening> {
  const reader = bodyReader(a.response);
  const parser = new SseParser();
  const p: Opening = { reader, parser, events: [], ended: false };
  let first: SseEvent | undefined;
  while (!first) {
    const { done, value } = await reader.read();
    if (done) {
      p.events.push(...parser.end());
      p.ended = true;
    } else p.events.push(...parser.push(value!));
    first = p.events.find((ev) => ev.event !== "ping");
    if (!first && p.ended) throw new Error("upstream closed the stream before the first event");
  }
  const why = notAnOpening(upstream, first);
  if (why) throw new Error(why);
  return p;
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

/** How long a stream whose client left after the upstream's finish waits for the upstream's usage. */
export const USAGE_GRACE_MS = 2_000;

/** Every open stream's keep-alive, one interval for all. */
export const keepAlives = new KeepAliveSweep(15_000);

/** The response body's writer (Bun's direct stream controller). */
type Out = ReadableStreamDirectController;

/** How a relayed stream ended, for its hold: charged, free, or charged for what was delivered. */
type Ending = "completed" | "upstream_failed" | "cancelled";

/** A stream ready to relay: the attempt that answered, what firstEvents read of it, the pair's machine, the request's hold. */
export interface StreamStart {
  call: RelayCall;
  attempt: Attempt;
  opening: Opening;
  machine: StreamMachine;
  hold: Hold;
  model: Model;
  estimatedInputTokens: number;
  /** The request's output cap: what a cancelled stream's output estimate never exceeds. */
  maxOut: number;
  headers: Record<string, string>;
}

/**
 * Streams the upstream's events to the client through the pair's machine, chunk by chunk as they
 * arrive (a slow client holds the relay at its write, so it slows the upstream read instead of
 * growing a buffer). The machine says how the stream goes (its outcome, the upstream's last event, the text that carries
 * the final usage); the stream owns the request's hold from here and resolves it exactly once
 * (`finish`, reached from every ending):
 * - the final usage event (the one carrying cost_usd) waits for its charge to commit, so a crash
 *   never loses the charge of an answer the client saw complete, and the charge is the cost shown;
 * - the upstream failed: nothing is charged;
 * - the client cancelled: input plus the output delivered so far (billing rules, docs/database.md).
 */
export function relayStream(s: StreamStart): Response {
  const { call, attempt: a, opening: p, machine: m, hold, estimatedInputTokens } = s;
  // Both SDKs skip these: Messages parses and drops `ping`; a `:` line is an SSE comment.
  const keepAlive = call.log.endpoint === "messages" ? 'event: ping\ndata: {"type":"ping"}\n\n' : ": keep-alive\n\n";
  /** Hands text to the client; resolves once the client's socket takes more (a slow client slows the upstream read). */
  const write = (text: string, c: Out): number | Promise<number> => {
    const taken = c.write(text);
    c.flush();
    return taken;
  };
  /** finish has run: the hold is resolved and the stream is over. */
  let settled = false;
  // A stop's deadline (server.ts drain) cuts the upstream; the read below then fails and the client
  // gets its dialect's error event. Listened to only while the stream runs.
  // attemptRoutes left the call held by the cutoff; the stream lets it go when it ends.
  const cutoff = call.svc.cutoff;
  /** The instance's fence ended the call (Cutoff.cut): the holds are no longer relied upon, so the stream ends free. */
  const fence = () => (a.abort.signal.reason instanceof GatewayError ? a.abort.signal.reason : null);
  const costOf = (u: TokenUsage) => priceUsage(a.route.prices, u);
  /** What a finished answer is billed: the machine's usage, else our estimate (the one its final usage showed). */
  const answerUsage = () => m.usage ?? estimatedUsage(estimatedInputTokens, textOf(m));
  /** The delivered text, when the usage's output is the upstream's count of it (an output sample of the model's calibration). */
  const countedOutput = () => (m.outputCounted ? textOf(m) : null);

  /** The one place the hold resolves (if the final usage event has not posted it already). */
  const finish = async (ending: Ending): Promise<void> => {
    if (settled) return;
    settled = true;
    if (alive) keepAlives.remove(alive);
    cutoff.release(a.abort);
    if (!hold.open) return;
    if (ending === "upstream_failed") {
      hold.void("upstream_failed");
      call.log.errorCode = cutoff.aborted ? "shutdown" : (fence()?.code ?? "upstream_unavailable");
      call.log.costNano = 0;
      return writeLogAlone();
    }
    if (ending === "cancelled") call.log.errorCode = "client_cancelled";
    // A client gone after the upstream's finish had the whole answer: once the upstream's own count
    // of it has come (usageGrace), that is what it costs, not the estimate of the delivered text.
    const estimated = ending === "cancelled" && !(m.outcome === "completed" && m.outputCounted);
    const billed = estimated ? deliveredUsage(m, estimatedInputTokens, call.svc.calibration, s.model.id, s.maxOut) : answerUsage();
    try {
      await post(call, hold, costOf(billed), billed, 200, m.inputCounted, estimated ? null : countedOutput());
    } catch (e) {
      // Not charged (the write rolled back and the hold went): the answer has gone out free. One
      // event line, not a rethrow (Bun prints a stack per failed stream); the row alone records it.
      events.writeFailed("ledger", call.requestId, e);
      await writeLogAlone();
    }
  };
  const writeLogAlone = () => {
    call.log.latencyMs = performance.now() - call.started;
    return writeBatched(call.svc.commits, call.svc.logs, call.log);
  };

  const cutMidStream = (reason: string) =>
    events.upstreamFailed({ requestId: call.requestId, route: a.route.key, provider: a.route.provider.id, reason });

  let alive: KeepAlive | undefined;
  /** Set when the client left between the upstream's finish and its usage (usageGrace). */
  let grace: { done: Promise<void>; end(): Promise<void> } | undefined;
  /** Sends the machine's text for these events; "charge_failed" when the final usage could not be charged (the client got an error event instead). */
  const emit = async (evs: SseEvent[], c: Out): Promise<"sent" | "nothing" | "charge_failed"> => {
    let out = "";
    let sent = false;
    for (const ev of evs) {
      const piece = m.push(ev);
      // The final usage event leaves once its charge is durable.
      if (hold.open && m.priced) {
        if (out) await write(out, c);
        out = "";
        sent = true;
        if (!(await chargeFinal(c))) return "charge_failed";
      }
      out += piece;
    }
    if (out) {
      await write(out, c);
      sent = true;
    }
    if (sent) alive!.quiet = false;
    return sent ? "sent" : "nothing";
  };
  /** Posts the answer's cost; false when it could not be committed (then the client gets an error event instead, free). */
  const chargeFinal = async (c: Out): Promise<boolean> => {
    const billed = answerUsage();
    try {
      await post(call, hold, costOf(billed), billed, 200, m.inputCounted, countedOutput());
      return true;
    } catch (e) {
      events.writeFailed("ledger", call.requestId, e);
      call.log.errorCode = "database_unavailable";
      call.log.costNano = 0;
      send(m.fail("api_error", "The gateway could not record the charge of this answer; it was not charged. Retry it."), c);
      await writeLogAlone();
      return false;
    }
  };
  const send = (text: string, c: Out) => {
    if (text) void write(text, c);
  };

  /**
   * Relays a batch of upstream events and ends the stream when they end it: a charge that failed,
   * the upstream's error, its last event (an upstream that keeps the connection open after it must
   * not hold the answer).
   */
  const relay = async (evs: SseEvent[], c: Out): Promise<void> => {
    const sent = await emit(evs, c);
    if (sent === "charge_failed") await end(c, "upstream_failed");
    else if (m.outcome === "upstream_failed") await upstreamFailed(c);
    else if (m.upstreamEnded) await ended(c);
  };

  const upstreamFailed = (c: Out) => {
    cutMidStream("the upstream sent an error event mid-stream");
    return end(c, "upstream_failed");
  };

  /** The upstream's answer is over (EOF, or its own last event): the dialect's ending, then finish. */
  const ended = async (c: Out): Promise<void> => {
    const sent = await emit(p.parser.end(), c);
    if (sent === "charge_failed") return end(c, "upstream_failed");
    if (m.outcome === "upstream_failed") return upstreamFailed(c);
    if (m.outcome === "running") {
      // EOF without the dialect's natural end: the upstream dropped us mid-answer.
      cutMidStream("stream ended before the dialect's final event");
      send(m.fail("api_error", "The upstream stream ended early; this request was not charged."), c);
      return end(c, "upstream_failed");
    }
    const ending = m.end();
    // The machine's own ending may carry the final usage (a Chat answer's estimate, a translated message_delta).
    if (hold.open && m.priced && !(await chargeFinal(c))) return end(c, "upstream_failed");
    send(ending, c);
    return end(c, "completed");
  };

  // Bun's direct stream: the text goes into the response's sink as it is written, without a chunk
  // queue, a pull per chunk and its promises between us and the socket (bench/sink-cost.ts). Its
  // pull runs the whole stream; a client that reads slowly holds it at `write` (backpressure).
  const body = new ReadableStream({
    type: "direct",
    async pull(c) {
      // A client gone before the body was asked for: finish has run, nothing to open.
      if (settled) return;
      // Silence upstream (a long thinking phase): a ping after a quiet period keeps proxies and clients from timing out.
      alive = keepAlives.add(() => void write(keepAlive, c));
      try {
        await relay(p.events.splice(0), c);
        while (!settled) {
          let chunk: { done: boolean; value?: Uint8Array };
          try {
            chunk = p.ended ? { done: true } : await p.reader.read();
          } catch (e) {
            // The client went away meanwhile (cancel aborted the upstream read): finish has run.
            if (settled) return;
            if (grace) return grace.end();
            if (!cutoff.aborted && !fence()) cutMidStream(`stream cut mid-way: ${describe(e)}`);
            const why = cutoff.aborted
              ? "The gateway is shutting down; this request was not charged. Retry it."
              : (fence()?.message ?? "The upstream connection failed mid-stream; this request was not charged.");
            send(m.fail("api_error", why), c);
            return end(c, "upstream_failed");
          }
          // The client went away while the read waited (cancel ended it): finish has run, nothing to report.
          if (settled) return;
          if (grace) {
            // The client is gone; the machine still reads, for the usage that follows the finish.
            for (const ev of chunk.done ? p.parser.end() : p.parser.push(chunk.value!)) m.push(ev);
            if (chunk.done || m.upstreamEnded || m.outputCounted) return grace.end();
            continue;
          }
          if (chunk.done) return ended(c);
          await relay(p.parser.push(chunk.value!), c);
        }
      } catch (e) {
        return fail(c, e);
      }
    },
    cancel() {
      if (!settled && hold.open && m.outcome === "completed" && !m.outputCounted && !m.upstreamEnded) {
        grace = usageGrace();
        return grace.done;
      }
      a.abort.abort(new Error("client went away"));
      p.reader.cancel().catch(() => {});
      return finish("cancelled");
    },
  });

  /**
   * A client gone after the upstream's finish but before its usage (a Chat upstream sends the usage
   * in a chunk of its own after finish_reason): the relay's loop keeps reading, now without writing,
   * for up to USAGE_GRACE_MS, so that the answer is billed the upstream's count rather than the
   * estimate of its text. Past the grace, or at the upstream's end, the stream finishes as cancelled
   * (billed as counted, or as delivered); the upstream is let go either way.
   */
  function usageGrace(): { done: Promise<void>; end(): Promise<void> } {
    // Nothing more is written: no keep-alive into a closed answer.
    if (alive) keepAlives.remove(alive);
    const { promise, resolve } = Promise.withResolvers<void>();
    const end = async (): Promise<void> => {
      clearTimeout(timer);
      if (!settled) await finish("cancelled");
      a.abort.abort(new Error("client went away"));
      p.reader.cancel().catch(() => {});
      resolve();
    };
    const timer = setTimeout(() => void end(), USAGE_GRACE_MS);
    return { done: promise, end };
  }

  /** Anything unexpected (a bug, a machine that throws): the stream ends as a failure, free. */
  async function fail(c: Out, e: unknown): Promise<void> {
    // A write that failed because the client left during the grace: the grace settles the answer.
    if (grace) return grace.end();
    events.gatewayError({ requestId: call.requestId, status: 500, code: "internal_error", cause: e, route: a.route.key, provider: a.route.provider.id });
    try {
      send(m.fail("api_error", "The gateway failed mid-stream; this request was not charged."), c);
    } catch {
      // the machine itself is what failed
    }
    await end(c, "upstream_failed");
  }

  async function end(c: Out, ending: Ending): Promise<void> {
    await finish(ending);
    try {
      c.close();
    } catch {
      // already closed by a cancel that raced the end
    }
    if (ending !== "completed") a.abort.abort(new Error("stream ended"));
    p.reader.cancel().catch(() => {});
  }

  const headers: Record<string, string> = {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    connection: "keep-alive",
    "x-accel-buffering": "no",
    ...s.headers,
  };
  return new Response(body, { headers });
}

const textOf = (m: Pick<StreamMachine, "outputBytes" | "outputChars">) => ({ bytes: m.outputBytes, chars: m.outputChars });

/**
 * What a cancelled stream is billed: input (the upstream's count, else our estimate) plus the output
 * delivered so far. The provider bills the operator for every token it generated, so the delivered
 * text is counted conservatively: on the model's output calibration (its answers' lowest bytes per
 * token), else the plain estimate (which counts CJK a token a character), never above the request's
 * output cap (no answer is longer). An upstream's running output count (message_start's
 * `output_tokens: 1`) is a floor, not the answer: the text delivered after it counts too.
 */
export function deliveredUsage(
  machine: Pick<StreamMachine, "usage" | "outputChars" | "outputBytes">,
  estimatedInputTokens: number,
  calibration: Pick<Calibration, "outputTokens">,
  model: string,
  maxOut: number,
): TokenUsage {
  const u = machine.usage;
  const delivered = Math.min(calibration.outputTokens(model, machine.outputBytes, machine.outputChars), maxOut);
  return {
    input: u ? u.input : estimatedInputTokens,
    output: Math.max(u?.output ?? 0, delivered),
    cacheRead: u?.cacheRead ?? 0,
    cacheWrite: u?.cacheWrite ?? 0,
  };
}
