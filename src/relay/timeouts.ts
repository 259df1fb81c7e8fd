import type { ProviderConfig } from "../config/schema.ts";
import { SseSizeGuard } from "../wire/sse.ts";

// The clocks of one upstream attempt. Defaults, each overridable per provider:
// - timeout_ms, until the response headers: 60 s for a stream (vendors send headers and a first
//   event within seconds); 600 s for a non-streamed call, whose headers only come with the whole
//   answer, so this must allow a long generation (the vendors' SDKs wait 10 min too).
// - idle_timeout_ms, the longest silence while the gateway waits on the body: 120 s, long enough for
//   a reasoning model's quiet phase, short enough that a stalled upstream frees its hold.
// - total_timeout_ms, headers to last byte: 15 min; a longer stream needs a higher value.
export const DEFAULT_STREAM_FIRST_BYTE_MS = 60_000;
export const DEFAULT_FIRST_BYTE_MS = 600_000;
export const DEFAULT_IDLE_MS = 120_000;
export const DEFAULT_TOTAL_MS = 900_000;

export interface Limits {
  firstByteMs: number;
  idleMs: number;
  totalMs: number;
}

export function limitsOf(config: ProviderConfig, stream: boolean): Limits {
  return {
    firstByteMs: config.timeout_ms ?? (stream ? DEFAULT_STREAM_FIRST_BYTE_MS : DEFAULT_FIRST_BYTE_MS),
    idleMs: config.idle_timeout_ms ?? DEFAULT_IDLE_MS,
    totalMs: config.total_timeout_ms ?? DEFAULT_TOTAL_MS,
  };
}

/**
 * Aborts an attempt when one of its limits runs out. One timer per attempt, re-armed only when it
 * fires: a chunk costs a clock read, not a clearTimeout/setTimeout pair. Idle time counts only while
 * a read is waiting, so a slow client (which stops our reads) does not make the upstream look silent.
 * The timer looks at least once per idle period from the start, so the headers' arrival needs no
 * timer of its own: a plain answer costs one setTimeout and one clearTimeout (bench/RESULTS.md).
 */
export class AttemptClock {
  private readonly started = performance.now();
  private headers = false;
  /** When the pending body read began; 0 when none is pending. */
  private readingSince = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly abort: AbortController,
    private readonly limits: Limits,
  ) {
    this.arm(Math.min(limits.firstByteMs, limits.idleMs, limits.totalMs));
  }

  /**
   * The headers arrived: from now on the body's silences are timed. The pending look comes within an
   * idle period of now, and each look re-arms for what is left, so every deadline stays exact.
   */
  gotHeaders(): void {
    if (this.timer === undefined) return;
    this.headers = true;
  }

  /** The client went away: the clock is also the attempt's listener on the client's signal. */
  handleEvent(): void {
    this.abort.abort(new Error("client went away"));
  }

  /** A body read in one go (a plain JSON answer): timed from the headers as a single pending read. */
  wholeRead(response: Response): Response {
    this.gotHeaders();
    this.readStarted();
    return response;
  }

  readStarted(): void {
    this.readingSince = performance.now();
  }

  readEnded(): void {
    this.readingSince = 0;
  }

  /** The body ended, was cancelled or failed: nothing left to time. */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(ms: number): void {
    // The clock as the timer's argument, not a closure over it: no function made per attempt (bench/RESULTS.md).
    this.timer = setTimeout(AttemptClock.look, Math.max(0, ms), this);
  }

  private static look(clock: AttemptClock): void {
    clock.check();
  }

  private check(): void {
    if (this.timer === undefined) return;
    const now = performance.now();
    const { firstByteMs, idleMs, totalMs } = this.limits;
    const expired =
      now - this.started >= totalMs
        ? `the upstream call exceeded its total time of ${totalMs} ms`
        : !this.headers
          ? now - this.started >= firstByteMs
            ? `no answer within ${firstByteMs} ms`
            : null
          : this.readingSince && now - this.readingSince >= idleMs
            ? `no byte from the upstream for ${idleMs} ms`
            : null;
    if (expired) {
      this.timer = undefined;
      this.abort.abort(new Error(expired));
      return;
    }
    // With no read pending, look again one idle period from now.
    // Before the headers, also one idle period on: their arrival arms nothing (gotHeaders).
    const next = !this.headers ? Math.min(this.started + firstByteMs, now + idleMs) : (this.readingSince || now) + idleMs;
    this.arm(Math.min(next, this.started + totalMs) - now);
  }
}

/** What the relay reads an upstream body with: a stream's reader, or the timed reader behind one. */
export interface ChunkReader {
  read(): Promise<{ done: boolean; value?: Uint8Array }>;
  cancel(reason?: unknown): Promise<void>;
}

/**
 * The upstream's body read under its clock and, for SSE, its size guard: each read is timed, the
 * clock stops when the body ends, fails or is cancelled.
 */
class TimedReader implements ChunkReader {
  constructor(
    private readonly reader: ChunkReader,
    private readonly clock: AttemptClock,
    private readonly guard: SseSizeGuard | null,
  ) {}

  async read(): Promise<{ done: boolean; value?: Uint8Array }> {
    let chunk: { done: boolean; value?: Uint8Array };
    this.clock.readStarted();
    try {
      chunk = await this.reader.read();
    } catch (e) {
      this.clock.stop();
      throw e;
    } finally {
      this.clock.readEnded();
    }
    if (chunk.done) {
      this.clock.stop();
      return chunk;
    }
    const overflow = this.guard?.push(chunk.value!);
    if (overflow) {
      this.clock.stop();
      this.reader.cancel(overflow).catch(() => {});
      throw overflow;
    }
    return chunk;
  }

  cancel(reason?: unknown): Promise<void> {
    this.clock.stop();
    return this.reader.cancel(reason);
  }
}

// The timed reader behind each timed answer, for the relay to read directly: through the wrapping
// stream every chunk cost a second pull and its promises (bench/relay-chunks.ts: 0.24 µs of the
// relay's 1.06 µs per chunk). Weak, so an answer nobody reads takes its reader with it.
const timedReaders = new WeakMap<Response, TimedReader>();

/**
 * The answer with its body timed by `clock` and, for SSE, bounded by `guard`; the relay reads it as
 * it would the upstream's own. The clock stops when the body ends, fails or is cancelled.
 */
export function timedResponse(response: Response, clock: AttemptClock, guard: SseSizeGuard | null): Response {
  clock.gotHeaders();
  if (!response.body) {
    clock.stop();
    return response;
  }
  const reader = new TimedReader(response.body.getReader(), clock, guard);
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(c) {
        const chunk = await reader.read();
        if (chunk.done) c.close();
        else c.enqueue(chunk.value!);
      },
      cancel: (reason) => reader.cancel(reason),
    },
    // Read only when the relay asks: a slow client keeps slowing the upstream read.
    { highWaterMark: 0 },
  );
  const timed = new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  timedReaders.set(timed, reader);
  return timed;
}

/**
 * A reader of the answer's body: the timed reader itself when timedResponse made the answer (its
 * wrapping stream is then never read), else the body's own reader.
 */
export function bodyReader(response: Response): ChunkReader {
  return timedReaders.get(response) ?? response.body!.getReader();
}
