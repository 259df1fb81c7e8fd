/** One open stream in a sweep: quiet until it sends something, and what it sends when it stayed quiet. */
export interface KeepAlive {
  /** Nothing was sent since the last tick; the stream clears it on every send. */
  quiet: boolean;
  readonly send: () => void;
}

/**
 * The keep-alive clock of every open stream: one interval for all of them, running only while one is
 * open, instead of an interval per stream (a timer and its closure for each of thousands of streams).
 * A stream that sent nothing between two ticks gets its keep-alive at the second: as with a clock of
 * its own, a keep-alive follows at least one and at most two periods of silence.
 */
export class KeepAliveSweep {
  private readonly live = new Set<KeepAlive>();
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(private readonly periodMs: number) {}

  /** A stream opens: from the next tick on, a whole period in which it sent nothing ends with `send`. */
  add(send: () => void): KeepAlive {
    const k: KeepAlive = { quiet: false, send };
    this.live.add(k);
    this.timer ??= setInterval(() => this.tick(), this.periodMs);
    return k;
  }

  /** The stream is over: no keep-alive after this; the interval stops with the last stream. */
  remove(k: KeepAlive): void {
    this.live.delete(k);
    if (this.live.size > 0 || this.timer === undefined) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The interval is running (some stream is open). */
  get running(): boolean {
    return this.timer !== undefined;
  }

  private tick(): void {
    for (const k of this.live) {
      const wasQuiet = k.quiet;
      k.quiet = true;
      if (!wasQuiet) continue;
      try {
        k.send();
      } catch {
        // A stream closed under it: the others still get theirs.
      }
    }
  }
}
