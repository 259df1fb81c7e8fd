import { GatewayError } from "../core/errors.ts";

/**
 * At most `limit` attempts per key in any window of `windowMs` (a sliding log of the last `limit`
 * times): the login and registration throttles of the dashboard, per address and per account.
 * In memory like the token buckets: a restart forgives everyone, and each process counts its own.
 */
export class Throttle {
  private readonly log = new Map<string, number[]>();
  private sweptAt = 0;

  constructor(
    readonly limit: number,
    readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Refuses with 429 rate_limit and Retry-After while `key` has used its attempts; records nothing. */
  check(key: string, what: string): void {
    const t = this.now();
    if (t - this.sweptAt > this.windowMs) this.sweep(t);
    const times = this.live(key, t);
    if (times.length < this.limit) return;
    const retryAfter = Math.max(1, Math.ceil((times[0]! + this.windowMs - t) / 1000));
    throw new GatewayError("rate_limit", `Too many ${what}. Retry after ${retryAfter} seconds.`, { retryAfter });
  }

  /** Counts one attempt of `key`. */
  hit(key: string): void {
    const t = this.now();
    const times = this.live(key, t);
    times.push(t);
    if (times.length > this.limit) times.shift();
    this.log.set(key, times);
  }

  /** Forgets `key`'s attempts (a login that succeeded). */
  clear(key: string): void {
    this.log.delete(key);
  }

  get size(): number {
    return this.log.size;
  }

  private live(key: string, t: number): number[] {
    const times = (this.log.get(key) ?? []).filter((at) => t - at < this.windowMs);
    if (times.length === 0) this.log.delete(key);
    return times;
  }

  // Keys whose last attempt is out of the window hold nothing: dropped, so made-up emails cannot grow the map.
  private sweep(t: number): void {
    this.sweptAt = t;
    for (const [key, times] of this.log) if (t - times.at(-1)! >= this.windowMs) this.log.delete(key);
  }
}
