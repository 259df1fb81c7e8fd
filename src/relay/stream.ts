import { SseParser, type SseEvent } from "../wire/sse.ts";
import type { Dialect } from "../dialects/dialect.ts";
import type { Attempt } from "./routes.ts";
import { bodyReader } from "./timeouts.ts";
import { SsePump, type Opening } from "./sse-pump.ts";
import { StreamBilling, type BilledStream } from "./stream-billing.ts";
import type { RelayCall } from "./context.ts";
import { bodySize } from "../ledger/estimate.ts";

// A relayed stream: its opening (firstEvents), then its pump and its billing (relayStream).
export { keepAlives, type Opening } from "./sse-pump.ts";
export { USAGE_GRACE_MS } from "./stream-billing.ts";

/**
 * Reads until the first event of the answer (pings aside) and checks that it opens the dialect's
 * answer. A route that drops, closes, or opens with an error or with events that are not its dialect's
 * has not sent the client anything yet, so the relay may still fall back to the next route, or answer
 * 502 before the first byte (docs/api.md#rules, rule 8), instead of a 200 stream that can only fail.
 */
export async function firstEvents(attempt: Attempt, upstream: Dialect): Promise<Opening> {
  const reader = bodyReader(attempt.response);
  const parser = new SseParser();
  const opening: Opening = { reader, parser, events: [], ended: false };
  let first: SseEvent | undefined;
  while (!first) {
    const { done, value } = await reader.read();
    if (done) {
      opening.events.push(...parser.end());
      opening.ended = true;
    } else opening.events.push(...parser.push(value!));
    first = opening.events.find((ev) => ev.event !== "ping");
    if (!first && opening.ended) throw new Error("upstream closed the stream before the first event");
  }
  const why = notAnOpening(upstream, first);
  if (why) throw new Error(why);
  return opening;
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

const NO_BYTES = new Uint8Array(0);

/**
 * An open stream lives for minutes, and its call with it; the request's body is not read again once
 * the upstream has answered (its size for the estimator was measured before the hold, charge.ts
 * bodySizeOf). Kept, an agent's 100 KB turn and the several times larger tree parsed from it stayed
 * alive for every open stream.
 */
function letGoOfBody(call: RelayCall): void {
  if (call.bodySize === undefined && call.bytes) call.bodySize = bodySize(call.bytes);
  call.bytes = NO_BYTES;
  call.json = {};
}

/** A stream ready to relay: the attempt that answered, what firstEvents read of it, the pair's machine, the request's hold. */
export interface StreamStart extends BilledStream {
  opening: Opening;
  headers: Record<string, string>;
}

/**
 * Streams the upstream's events to the client through the pair's machine: the SSE pump (sse-pump.ts)
 * moves the events, the stream's billing (stream-billing.ts) owns the request's hold from here and
 * resolves it exactly once, whichever way the stream ends.
 */
export function relayStream(s: StreamStart): Response {
  letGoOfBody(s.call);
  const pump = new SsePump(s.call, s.attempt, s.opening, s.machine, new StreamBilling(s));
  // Bun's direct stream: the text goes into the response's sink as it is written, without a chunk
  // queue, a pull per chunk and its promises between us and the socket (bench/sink-cost.ts). Its
  // pull runs the whole stream; a client that reads slowly holds it at `write` (backpressure).
  const body = new ReadableStream({
    type: "direct",
    pull(out) {
      return pump.run(out);
    },
    cancel() {
      return pump.cancel();
    },
  });
  const headers: Record<string, string> = {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    connection: "keep-alive",
    "x-accel-buffering": "no",
    ...s.headers,
  };
  return new Response(body, { headers });
}
