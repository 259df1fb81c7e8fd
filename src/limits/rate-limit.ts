import { GatewayError } from "../errors.ts";

interface Bucket {
  /** Tokens in 1/60 000ths: at r requests per minute a bucket gains r units per millisecond. */
  units: number;
  at: number;
}

// Whole units keep the arithmetic exact on a millisecond clock: with fractional tokens
// (rpm / 60 000 per ms) 2999 ms + 1 ms of refill came to 0.999… of a token, so a request sent
// exactly when Retry-After said was refused again.
const UNITS_PER_TOKEN = 60_000;

/**
 * Token buckets per (key, bucket name): capacity = rpm, refilled continuously at rpm/60 per second.
 * Lives in memory only; a restart forgives everyone, which is the documented trade-off.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private sweptAt = 0;

  constructor(private readonly now: () => number = () => performance.now()) {}

  take(id: string, rpm: number, what: string): void {
    const t = this.now();
    const capacity = rpm * UNITS_PER_TOKEN;
    let b = this.buckets.get(id);
    if (!b) {
      b = { units: capacity, at: t };
      this.buckets.set(id, b);
    } else {
      b.units = Math.min(capacity, b.units + (t - b.at) * rpm);
      b.at = t;
    }
    if (t - this.sweptAt > 60_000) this.sweep(t);
    if (b.units >= UNITS_PER_TOKEN) {
      b.units -= UNITS_PER_TOKEN;
      return;
    }
    const waitMs = (UNITS_PER_TOKEN - b.units) / rpm;
    const retryAfter = Math.max(1, Math.ceil(waitMs / 1000));
    throw new GatewayError("rate_limit", `Rate limit exceeded: ${rpm} requests per minute for ${what}. Retry after ${retryAfter} seconds.`, {
      retryAfter,
    });
  }

  get size(): number {
    return this.buckets.size;
  }

  // A bucket idle for over a minute is full again, indistinguishable from a new one: drop it.
  private sweep(t: number): void {
    this.sweptAt = t;
    for (const [id, b] of this.buckets) if (t - b.at > 60_000) this.buckets.delete(id);
  }
}
