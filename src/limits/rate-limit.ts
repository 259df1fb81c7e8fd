import { GatewayError } from "../core/errors.ts";

/** One key's bucket; `rpm` is the limit it was last taken at (a key's rpm can be changed while it runs). */
export interface Bucket {
  /** Tokens in 1/60 000ths: at r requests per minute a bucket gains r units per millisecond. */
  units: number;
  at: number;
  rpm: number;
}

// Whole units keep the arithmetic exact on a millisecond clock: with fractional tokens
// (rpm / 60 000 per ms) 2999 ms + 1 ms of refill came to 0.999… of a token, so a request sent
// exactly when Retry-After said was refused again. redis-rate-limit.ts's script counts the same units.
export const UNITS_PER_TOKEN = 60_000;

/** One bucket a request takes from: its id (`<keyId>:main`, `<keyId>:ct`, `acct:<accountId>`), its limit, and what a refusal names. */
export interface Take {
  id: string;
  rpm: number;
  what: string;
}

/**
 * Where the token buckets live: this process's memory (RateLimiter) or a store shared by several
 * instances (RedisRateLimiter, `[limits] store`). `take` answers synchronously when it can: the
 * in-process map must not cost the hot path an await.
 */
export interface Limiter {
  /** Takes one request from the bucket `id`, or refuses with 429. */
  take(id: string, rpm: number, what: string): Bucket | Promise<Bucket>;
  /**
   * Takes one request from every bucket or from none (a request the account's bucket refuses spends
   * nothing of its key's), and returns the tightest (`tightest`), whose headers the answer carries.
   * A refusal is the bucket that would keep the request waiting longest.
   */
  takeAll(takes: readonly Take[]): Bucket | Promise<Bucket>;
  /** The x-ratelimit-*-requests headers of a bucket `take` returned. */
  withHeaders(h: Headers, b: Bucket): Headers;
  /** Refuses (503 rate_limit_unavailable) while the limiter cannot count a request: GET /readyz asks it. */
  ready(): void | Promise<void>;
  /** Lets go of what the limiter holds open (a connection), at the server's stop. */
  close(): void;
}

/**
 * Token buckets per (key, bucket name): capacity = rpm, refilled continuously at rpm/60 per second.
 * Lives in memory only; a restart forgives everyone, which is the documented trade-off.
 */
export class RateLimiter implements Limiter {
  private readonly buckets = new Map<string, Bucket>();
  private sweptAt = 0;

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Takes one request from the bucket and returns it (for withHeaders), or refuses with 429. */
  take(id: string, rpm: number, what: string): Bucket {
    // One bucket (every request without [limits] account_rpm): no list to build, compare or reduce.
    const t = this.now();
    const b = this.refilled(id, rpm, t);
    if (t - this.sweptAt > 60_000) this.sweep(t);
    if (b.units < UNITS_PER_TOKEN) throw refusal(b, what, this.withHeaders(new Headers(), b));
    b.units -= UNITS_PER_TOKEN;
    return b;
  }

  takeAll(takes: readonly Take[]): Bucket {
    if (takes.length === 1) return this.take(takes[0]!.id, takes[0]!.rpm, takes[0]!.what);
    const t = this.now();
    const buckets = takes.map(({ id, rpm }) => this.refilled(id, rpm, t));
    if (t - this.sweptAt > 60_000) this.sweep(t);
    const short = longestWait(buckets);
    if (short !== -1) throw refusal(buckets[short]!, takes[short]!.what, this.withHeaders(new Headers(), buckets[short]!));
    for (const b of buckets) b.units -= UNITS_PER_TOKEN;
    return tightest(buckets);
  }

  private refilled(id: string, rpm: number, t: number): Bucket {
    const capacity = rpm * UNITS_PER_TOKEN;
    let b = this.buckets.get(id);
    if (!b) {
      b = { units: capacity, at: t, rpm };
      this.buckets.set(id, b);
    } else {
      b.units = Math.min(capacity, b.units + (t - b.at) * rpm);
      b.at = t;
      b.rpm = rpm;
    }
    return b;
  }

  /**
   * OpenAI's x-ratelimit-*-requests headers for `b` as it stands now (after this request's take and any
   * others since): the limit, whole requests left, and the time until the bucket is full again.
   */
  withHeaders(h: Headers, b: Bucket): Headers {
    return bucketHeaders(h, b, this.now());
  }

  get size(): number {
    return this.buckets.size;
  }

  // In this process's memory: always able to count.
  ready(): void {}

  close(): void {}

  // A bucket idle for over a minute is full again, indistinguishable from a new one: drop it.
  private sweep(t: number): void {
    this.sweptAt = t;
    for (const [id, b] of this.buckets) if (t - b.at > 60_000) this.buckets.delete(id);
  }
}

/** The index of the bucket without a whole request in it that refills last; -1 when every bucket has one. */
export function longestWait(buckets: readonly Bucket[]): number {
  let at = -1;
  let worst = -1;
  buckets.forEach((b, i) => {
    if (b.units >= UNITS_PER_TOKEN) return;
    const wait = (UNITS_PER_TOKEN - b.units) / b.rpm;
    if (wait > worst) [at, worst] = [i, wait];
  });
  return at;
}

/**
 * The bucket a client should go by: the fewest whole requests left, then the lower limit. With an
 * account's bucket beside its key's, that is whichever will refuse first.
 */
export function tightest(buckets: readonly Bucket[]): Bucket {
  const left = (b: Bucket) => Math.floor(b.units / UNITS_PER_TOKEN);
  return buckets.reduce((a, b) => (left(b) < left(a) || (left(b) === left(a) && b.rpm < a.rpm) ? b : a));
}

/** "1 second", "20 seconds": the refusals' English. */
const counted = (n: number, unit: string): string => `${n} ${unit}${n === 1 ? "" : "s"}`;

/** The last sentence of every 429 rate_limit's message. */
export const retryAfterSentence = (seconds: number): string => `Retry after ${counted(seconds, "second")}.`;

/** The 429 of a bucket with less than one request in it: Retry-After in whole seconds, never 0. */
export function refusal(b: Bucket, what: string, headers: Headers): GatewayError {
  const waitMs = (UNITS_PER_TOKEN - b.units) / b.rpm;
  const retryAfter = Math.max(1, Math.ceil(waitMs / 1000));
  return new GatewayError("rate_limit", `Rate limit exceeded: ${counted(b.rpm, "request")} per minute for ${what}. ${retryAfterSentence(retryAfter)}`, {
    retryAfter,
    headers: Object.fromEntries(headers),
  });
}

/** The headers of `b` at `now` (the clock `b.at` was read on): refilled since, up to its capacity. */
export function bucketHeaders(h: Headers, b: Bucket, now: number): Headers {
  const units = Math.min(b.rpm * UNITS_PER_TOKEN, b.units + (now - b.at) * b.rpm);
  h.set("x-ratelimit-limit-requests", String(b.rpm));
  h.set("x-ratelimit-remaining-requests", String(Math.floor(units / UNITS_PER_TOKEN)));
  h.set("x-ratelimit-reset-requests", goDuration((b.rpm * UNITS_PER_TOKEN - units) / b.rpm));
  return h;
}

/**
 * A duration as OpenAI writes x-ratelimit-reset-requests, which is Go's time.Duration format
 * ("20ms", "1s", "6m0s", "2m59.56s"; clients parse it with time.ParseDuration or the like).
 * Rounded up to the millisecond, so that waiting that long always finds the bucket full.
 */
export function goDuration(ms: number): string {
  const total = Math.ceil(ms);
  if (total <= 0) return "0s";
  if (total < 1000) return `${total}ms`;
  const h = Math.floor(total / 3_600_000);
  const m = Math.floor((total % 3_600_000) / 60_000);
  const s = (total % 60_000) / 1000;
  if (h) return `${h}h${m}m${s}s`;
  if (m) return `${m}m${s}s`;
  return `${s}s`;
}
