// The one contract every stream machine keeps, native and translating alike: upstream SSE events in,
// the client's SSE text out, and how the stream went. The relay reads the outcome, the usage and the
// place of the final usage from the machine, so it never re-detects a finish or an error in the text.
// A machine keeps all its state on itself: concurrent streams share nothing.

import type { TokenUsage } from "../core/money.ts";
import type { JsonObject } from "../wire/shapes.ts";
import { encodeSse, type SseEvent } from "../wire/sse.ts";
import { TextCount } from "../ledger/estimate.ts";

/**
 * - running: neither the upstream's natural end nor a failure yet;
 * - completed: the upstream's natural end (a finish_reason, message_stop) was seen, so end() writes
 *   the dialect's ending and the answer is billed;
 * - upstream_failed: the upstream signalled an error, or the stream was failed (fail(), or end()
 *   before the natural end); the client got the dialect's error event and nothing is billed.
 */
export type StreamOutcome = "running" | "completed" | "upstream_failed";

/** How a stream went so far: what a machine and the translator behind a translating one both tell. */
export interface StreamTally {
  readonly outcome: StreamOutcome;
  /** What to bill now: the upstream's valid counts (or the estimate shown as the final usage), null when there are none. */
  readonly usage: TokenUsage | null;
  /** The input counts of `usage` are the upstream's own, not our estimate (the estimator's calibration learns from those only). */
  readonly inputCounted: boolean;
  /** `usage`'s output count is the upstream's final one for the whole answer (the estimator's output calibration learns from those only). */
  readonly outputCounted: boolean;
  /** Characters of text, thinking and tool arguments produced (the output estimate of a cut stream). */
  readonly outputChars: number;
  /** Their UTF-8 bytes. */
  readonly outputBytes: number;
  /**
   * Turns true with the push or end whose text carries the final usage and its cost_usd: the relay
   * commits the charge before that text leaves, so a client never sees a cost that was not charged.
   */
  readonly priced: boolean;
}

export interface StreamMachine extends StreamTally {
  /** The client's text for one upstream event ("" when nothing goes out for it yet). */
  push(ev: SseEvent): string;
  /** The upstream is over (EOF, or its last event was pushed): the dialect's ending, or its error event when the answer was cut short. */
  end(): string;
  /** A failure after the first byte: the dialect's own error event, once ("" once the stream has ended). */
  fail(type: string, message: string): string;
  /** The upstream's own last event ([DONE], message_stop) was pushed: nothing more is read, end() follows. */
  readonly upstreamEnded: boolean;
}

/** The output counted as it goes out, which a stream's outputChars and outputBytes tell. */
export abstract class CountsOutput {
  protected readonly out = new TextCount();

  get outputChars(): number {
    return this.out.chars;
  }
  get outputBytes(): number {
    return this.out.bytes;
  }
}

/** One upstream event's JSON object, or null for anything else (the machines skip it). */
export function parseObject(text: string): JsonObject | null {
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as JsonObject) : null;
  } catch {
    return null;
  }
}

/** Named events (Messages, Responses) as SSE text. */
export const encodeEvents = (events: readonly { event: string; data: JsonObject }[]): string => {
  let out = "";
  for (const e of events) out += encodeSse(e.event, JSON.stringify(e.data));
  return out;
};

/** The type and message of an upstream's error object (`{error:{…}}` or the error itself). */
export function errorOf(data: JsonObject): { type: string; message: string } {
  const e = (data.error ?? data) as { type?: string; message?: string };
  return { type: e.type ?? "api_error", message: e.message ?? "Upstream error" };
}

/** A translator behind a machine: events in the client's dialect for the upstream's end and for a failure, and its tally. */
export interface Translator<Out> extends StreamTally {
  done(): Out[];
  fail(type: string, message: string): Out[];
}

/**
 * The SSE side of a translating pair: a subclass parses each upstream event for its translator (and
 * says which event is the upstream's last); the translator keeps the state, this encodes what it gives.
 */
export abstract class TranslatingMachine<Out> implements StreamMachine {
  /** Set by push at the upstream's own last event. */
  protected last = false;

  constructor(
    protected readonly t: Translator<Out>,
    protected readonly encode: (out: Out[]) => string,
  ) {}

  abstract push(ev: SseEvent): string;

  end(): string {
    return this.encode(this.t.done());
  }
  fail(type: string, message: string): string {
    return this.encode(this.t.fail(type, message));
  }
  get outcome(): StreamOutcome {
    return this.t.outcome;
  }
  get upstreamEnded(): boolean {
    return this.last;
  }
  get usage(): TokenUsage | null {
    return this.t.usage;
  }
  get inputCounted(): boolean {
    return this.t.inputCounted;
  }
  get outputCounted(): boolean {
    return this.t.outputCounted;
  }
  get outputChars(): number {
    return this.t.outputChars;
  }
  get outputBytes(): number {
    return this.t.outputBytes;
  }
  get priced(): boolean {
    return this.t.priced;
  }
}
