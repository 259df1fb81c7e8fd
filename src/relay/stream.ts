import { estimatedUsage } from "../dialects/stream-usage.ts";
import type { Model } from "../catalog/catalog.ts";
import type { KeyedCall } from "../http/pipeline.ts";
import type { Hold } from "../ledger/ledger.ts";
import { tokenCost, type TokenUsage } from "../ledger/money.ts";
import { SseParser, type SseEvent } from "../upstreams/sse.ts";
import type { StreamAdapter } from "./adapters.ts";
import type { Attempt } from "./routes.ts";
import { settle } from "./text.ts";
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
 * Reads until the first complete SSE event. A route that drops or closes before it has not sent the
 * client anything yet, so the relay may still fall back to the next route (spec Rules 8).
 */
export async function firstEvents(a: Attempt): Promise<void> {
  const reader: ChunkReader = a.response.body!.getReader();
  const parser = new SseParser();
  const p: Prefetch = { reader, parser, events: [], ended: false };
  while (p.events.length === 0) {
    const { done, value } = await reader.read();
    if (done) {
      p.events.push(...parser.end());
      if (p.events.length === 0) throw new Error("upstream closed the stream before the first event");
      p.ended = true;
      break;
    }
    p.events.push(...parser.push(value!));
  }
  prefetched.set(a, p);
}

const KEEPALIVE_MS = 15_000;

type Outcome = "completed" | "upstream_failed" | "cancelled";

/**
 * Streams the upstream's events to the client through the adapter, chunk by chunk as they arrive
 * (pull-based, so a slow client slows the upstream read instead of growing a buffer). Settles once,
 * whatever the ending: completed → charge the usage; upstream failure → charge nothing;
 * client cancel → charge what was produced up to the cancel.
 */
export function relayStream(
  call: KeyedCall,
  a: Attempt,
  adapter: StreamAdapter,
  hold: Hold,
  model: Model,
  estimatedInputTokens: number,
  extraHeaders: Record<string, string>,
): Response {
  const p = prefetched.get(a)!;
  const enc = new TextEncoder();
  // Both SDKs skip these: Messages parses and drops `ping`; a `:` line is an SSE comment.
  const keepAlive = call.log.endpoint === "messages" ? 'event: ping\ndata: {"type":"ping"}\n\n' : ": keep-alive\n\n";
  let settled = false;
  // A stop's deadline (server.ts drain) cuts the upstream; the read below then fails and the client
  // gets its dialect's error event. Listened to only while the stream runs.
  const cutoff = call.svc.cutoff.signal;
  const onCutoff = () => a.abort.abort(cutoff.reason);
  cutoff.addEventListener("abort", onCutoff, { once: true });

  const finish = (outcome: Outcome): Promise<void> => {
    if (settled) return Promise.resolve();
    settled = true;
    clearInterval(keepAliveTimer);
    cutoff.removeEventListener("abort", onCutoff);
    const usage = adapter.usage;
    let ledgerWrite: () => void;
    if (outcome === "upstream_failed") {
      ledgerWrite = () => {
        call.svc.ledger.release(hold);
        call.log.errorCode = cutoff.aborted ? "shutdown" : "upstream_unavailable";
      };
    } else {
      const billed: TokenUsage = usage ?? estimatedUsage(estimatedInputTokens, adapter.outputChars);
      ledgerWrite = () => {
        settle(call, hold, tokenCost(model.prices, billed), billed);
        if (outcome === "cancelled") call.log.errorCode = "client_cancelled";
      };
    }
    const writeLog = () => {
      call.log.latencyMs = performance.now() - call.started;
      call.svc.logs.write(call.log);
    };
    // The ledger write and its log row commit together, before the stream's end goes out.
    return call.svc.commits
      .run(() => {
        ledgerWrite();
        writeLog();
      })
      .catch((e: unknown) => {
        // The ledger write failed and rolled back with the row; the row alone still records the request.
        // The batch may not even have begun (read-only database): the hold goes either way. The answer
        // has gone out uncharged; one event line, not a rethrow (Bun prints a stack per failed stream).
        call.svc.ledger.release(hold);
        writeLog();
        events.writeFailed("ledger", call.requestId, e);
      });
  };

  const cutMidStream = (reason: string) =>
    events.upstreamFailed({ requestId: call.requestId, route: a.route.key, provider: a.route.provider.id, reason });

  let quiet = false;
  let keepAliveTimer: ReturnType<typeof setInterval> | undefined;
  /** Sends the adapter's text for these events; true when any was sent. */
  const emit = (events: SseEvent[], c: ReadableStreamDefaultController<Uint8Array>): boolean => {
    let out = "";
    for (const ev of events) out += adapter.push(ev);
    if (!out) return false;
    c.enqueue(enc.encode(out));
    quiet = false;
    return true;
  };
  const send = (text: string, c: ReadableStreamDefaultController<Uint8Array>) => {
    if (text) c.enqueue(enc.encode(text));
  };

  const body = new ReadableStream<Uint8Array>({
    start(c) {
      // Silence upstream (a long thinking phase): a ping after a quiet period keeps proxies and clients from timing out.
      keepAliveTimer = setInterval(() => {
        if (quiet && !settled) c.enqueue(enc.encode(keepAlive));
        quiet = true;
      }, KEEPALIVE_MS);
      emit(p.events.splice(0), c);
      if (adapter.upstreamError) return end(c, "upstream_failed");
    },
    // Reads until something is sent or the stream ends: a pull that enqueues nothing is not called again.
    async pull(c) {
      while (!settled) {
        let chunk: { done: boolean; value?: Uint8Array };
        try {
          chunk = p.ended ? { done: true } : await p.reader.read();
        } catch (e) {
          if (!cutoff.aborted) cutMidStream(`stream cut mid-way: ${describe(e)}`);
          const why = cutoff.aborted
            ? "The gateway is shutting down; this request was not charged. Retry it."
            : "The upstream connection failed mid-stream; this request was not charged.";
          send(adapter.fail("api_error", why), c);
          return end(c, "upstream_failed");
        }
        if (chunk.done) {
          emit(p.parser.end(), c);
          if (adapter.upstreamError) return end(c, "upstream_failed");
          if (!adapter.complete) {
            // EOF without the dialect's ending: the upstream dropped us mid-answer.
            cutMidStream("stream ended before the dialect's final event");
            send(adapter.fail("api_error", "The upstream stream ended early; this request was not charged."), c);
            return end(c, "upstream_failed");
          }
          send(adapter.done(), c);
          return end(c, "completed");
        }
        const sent = emit(p.parser.push(chunk.value!), c);
        if (adapter.upstreamError) return end(c, "upstream_failed");
        if (sent) return;
      }
    },
    cancel() {
      a.abort.abort(new Error("client went away"));
      p.reader.cancel().catch(() => {});
      return finish("cancelled");
    },
  });

  async function end(c: ReadableStreamDefaultController<Uint8Array>, outcome: Outcome): Promise<void> {
    await finish(outcome);
    c.close();
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
