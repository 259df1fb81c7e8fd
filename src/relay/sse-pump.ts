import type { RelayCall } from "./context.ts";
import type { SseParser, SseEvent } from "../wire/sse.ts";
import type { StreamMachine } from "../dialects/stream-machine.ts";
import type { Attempt } from "./routes.ts";
import { describe, events } from "../core/events.ts";
import type { ChunkReader } from "./timeouts.ts";
import { KeepAliveSweep, type KeepAlive } from "./keepalive.ts";
import type { Ending, StreamBilling, UsageGrace } from "./stream-billing.ts";

/** An upstream body as firstEvents leaves it: the events read ahead, not yet relayed, and the rest to read. */
export interface Opening {
  reader: ChunkReader;
  parser: SseParser;
  events: SseEvent[];
  /** The upstream closed while it was read ahead. */
  ended: boolean;
}

/** Every open stream's keep-alive, one interval for all. */
export const keepAlives = new KeepAliveSweep(15_000);

/** The response body's writer (Bun's direct stream controller). */
type Out = ReadableStreamDirectController;

/** What one batch of events did: sent text, sent nothing, or met a final usage whose charge failed (the client got an error event instead). */
type Emitted = "sent" | "nothing" | "charge_failed";

/**
 * The SSE pump: reads the upstream's events and writes the machine's text for them to the client,
 * chunk by chunk as they arrive. A slow client holds the pump at its write, so it slows the upstream
 * read instead of growing a buffer. Every ending goes through `close`, which settles the stream's
 * billing; the pump asks the billing only when the final usage may leave (chargeDue / chargeAnswer).
 */
export class SsePump {
  private out!: Out;
  private keepAlive: KeepAlive | undefined;
  /** Set when the client left between the upstream's finish and its usage. */
  private grace: UsageGrace | undefined;
  /** Both SDKs skip these: Messages parses and drops `ping`; a `:` line is an SSE comment. */
  private readonly ping: string;

  constructor(
    private readonly call: RelayCall,
    private readonly attempt: Attempt,
    private readonly opening: Opening,
    private readonly machine: StreamMachine,
    private readonly billing: StreamBilling,
  ) {
    this.ping = call.log.endpoint === "messages" ? 'event: ping\ndata: {"type":"ping"}\n\n' : ": keep-alive\n\n";
  }

  /** The direct stream's pull: runs the whole stream, from the events read ahead to its end. */
  async run(out: Out): Promise<void> {
    // A client gone before the body was asked for: the billing has settled, nothing to open.
    if (this.billing.settled) return;
    this.out = out;
    // Silence upstream (a long thinking phase): a ping after a quiet period keeps proxies and clients from timing out.
    this.keepAlive = keepAlives.add(() => void this.write(this.ping));
    const { opening, machine, billing } = this;
    // A stop's deadline (server.ts drain) cuts the upstream; the read below then fails and the client
    // gets its dialect's error event.
    const cutoff = this.call.svc.cutoff;
    try {
      await this.relayBatch(opening.events.splice(0));
      while (!billing.settled) {
        let chunk: { done: boolean; value?: Uint8Array };
        try {
          chunk = opening.ended ? { done: true } : await opening.reader.read();
        } catch (e) {
          // The client went away meanwhile (cancel aborted the upstream read): the billing has settled.
          if (billing.settled) return;
          if (this.grace) return this.grace.end();
          const fence = billing.fence();
          if (!cutoff.aborted && !fence) this.cutMidStream(`stream cut mid-way: ${describe(e)}`);
          const why = cutoff.aborted
            ? "The gateway is shutting down; this request was not charged. Retry it."
            : (fence?.message ?? "The upstream connection failed mid-stream; this request was not charged.");
          this.send(machine.fail("api_error", why));
          return this.close("upstream_failed");
        }
        // The client went away while the read waited (cancel ended it): settled, nothing to report.
        if (billing.settled) return;
        if (this.grace) {
          // The client is gone; the machine still reads, for the usage that follows the finish.
          for (const ev of chunk.done ? opening.parser.end() : opening.parser.push(chunk.value!)) machine.push(ev);
          if (chunk.done || machine.upstreamEnded || machine.outputCounted) return this.grace.end();
          continue;
        }
        if (chunk.done) return this.upstreamEnded();
        await this.relayBatch(opening.parser.push(chunk.value!));
      }
    } catch (e) {
      return this.failed(e);
    }
  }

  /** The client went away: the usage grace when the answer's count is on its way, else the upstream goes and the stream settles as cancelled. */
  cancel(): Promise<void> {
    const grace = this.billing.usageGraceOnCancel(() => this.letGoUpstream());
    if (grace) {
      // Nothing more is written: no keep-alive into a closed answer.
      this.stopKeepAlive();
      this.grace = grace;
      return grace.done;
    }
    this.letGoUpstream();
    return this.settle("cancelled");
  }

  /** Hands text to the client; resolves once the client's socket takes more (a slow client slows the upstream read). */
  private write(text: string): number | Promise<number> {
    const taken = this.out.write(text);
    this.out.flush();
    return taken;
  }

  private send(text: string): void {
    if (text) void this.write(text);
  }

  /** Sends the machine's text for these events, the final usage event only once its charge is durable. */
  private async emit(evs: SseEvent[]): Promise<Emitted> {
    const { machine, billing } = this;
    let out = "";
    let sent = false;
    for (const ev of evs) {
      const piece = machine.push(ev);
      if (billing.chargeDue) {
        if (out) await this.write(out);
        out = "";
        sent = true;
        if (!(await this.chargeFinal())) return "charge_failed";
      }
      out += piece;
    }
    if (out) {
      await this.write(out);
      sent = true;
    }
    if (sent) this.keepAlive!.quiet = false;
    return sent ? "sent" : "nothing";
  }

  /** Posts the answer's cost; false when it could not be committed (then the client gets an error event instead, free). */
  private async chargeFinal(): Promise<boolean> {
    if (await this.billing.chargeAnswer()) return true;
    this.send(this.machine.fail("api_error", "The gateway could not record the charge of this answer; it was not charged. Retry it."));
    await this.billing.writeLogAlone();
    return false;
  }

  /**
   * Relays a batch of upstream events and ends the stream when they end it: a charge that failed,
   * the upstream's error, its last event (an upstream that keeps the connection open after it must
   * not hold the answer).
   */
  private async relayBatch(evs: SseEvent[]): Promise<void> {
    const sent = await this.emit(evs);
    if (sent === "charge_failed") await this.close("upstream_failed");
    else if (this.machine.outcome === "upstream_failed") await this.upstreamErrored();
    else if (this.machine.upstreamEnded) await this.upstreamEnded();
  }

  private upstreamErrored(): Promise<void> {
    this.cutMidStream("the upstream sent an error event mid-stream");
    return this.close("upstream_failed");
  }

  /** The upstream's answer is over (EOF, or its own last event): the dialect's ending, then settle. */
  private async upstreamEnded(): Promise<void> {
    const { machine } = this;
    const sent = await this.emit(this.opening.parser.end());
    if (sent === "charge_failed") return this.close("upstream_failed");
    if (machine.outcome === "upstream_failed") return this.upstreamErrored();
    if (machine.outcome === "running") {
      // EOF without the dialect's natural end: the upstream dropped us mid-answer.
      this.cutMidStream("stream ended before the dialect's final event");
      this.send(machine.fail("api_error", "The upstream stream ended early; this request was not charged."));
      return this.close("upstream_failed");
    }
    const ending = machine.end();
    // The machine's own ending may carry the final usage (a Chat answer's estimate, a translated message_delta).
    if (this.billing.chargeDue && !(await this.chargeFinal())) return this.close("upstream_failed");
    this.send(ending);
    return this.close("completed");
  }

  /** Anything unexpected (a bug, a machine that throws): the stream ends as a failure, free. */
  private async failed(e: unknown): Promise<void> {
    // A write that failed because the client left during the grace: the grace settles the answer.
    if (this.grace) return this.grace.end();
    const { call, attempt } = this;
    events.gatewayError({ requestId: call.requestId, status: 500, code: "internal_error", cause: e, route: attempt.route.key, provider: attempt.route.provider.id });
    try {
      this.send(this.machine.fail("api_error", "The gateway failed mid-stream; this request was not charged."));
    } catch {
      // the machine itself is what failed
    }
    await this.close("upstream_failed");
  }

  /** Every ending the pump reaches: settle, close the client's body, let the upstream go. */
  private async close(ending: Ending): Promise<void> {
    await this.settle(ending);
    try {
      this.out.close();
    } catch {
      // already closed by a cancel that raced the end
    }
    if (ending !== "completed") this.attempt.abort.abort(new Error("stream ended"));
    this.opening.reader.cancel().catch(() => {});
  }

  private settle(ending: Ending): Promise<void> {
    this.stopKeepAlive();
    return this.billing.settle(ending);
  }

  private stopKeepAlive(): void {
    if (this.keepAlive) keepAlives.remove(this.keepAlive);
  }

  private letGoUpstream(): void {
    this.attempt.abort.abort(new Error("client went away"));
    this.opening.reader.cancel().catch(() => {});
  }

  private cutMidStream(reason: string): void {
    const { call, attempt } = this;
    events.upstreamFailed({ requestId: call.requestId, route: attempt.route.key, provider: attempt.route.provider.id, reason });
  }
}
