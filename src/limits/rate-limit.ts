import { GatewayError } from "../errors.ts";

interface Bucket {
  tokens: number;
  at: number;
}

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
    const rate = rpm / 60_000; // tokens per ms
    let b = this.buckets.get(id);
    if (!b) {
      b = { tokens: rpm, at: t };
      this.buckets.set(id, b);
    } else {
      b.tokens = Math.min(rpm, b.tokens + (t - b.at) * rate);
      b.at = t;
    }
    if (t - this.sweptAt > 60_000) this.sweep(t);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return;
    }
    const retryAfter = Math.max(1, Math.ceil((1 - b.tokens) / rate / 1000));
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
