import { GatewayError } from "../core/errors.ts";
import { retryAfterSentence } from "./rate-limit.ts";
import { events } from "../core/events.ts";

// An unauthenticated flood once filled the database (158 k bad-key requests in 20 s added 23 MB
// of request_logs rows, kept 90 days). Refusals that carry no valid key (401 no-key, 404
// on /v1) are answered and logged as before while the client's address has budget; past it they get
// 429 rate_limit at once, before the body is read, with no row: they are counted, and the count is
// one operator event per minute. Keys that are valid never touch this budget.

/** Refusals logged per client address per minute (and the burst): a token bucket. */
export const REFUSALS_PER_MINUTE = 60;
/** The same budget shared by every address, against a flood from many addresses (an IPv6 prefix). */
export const REFUSALS_PER_MINUTE_ALL = 600;
export const SUMMARY_WINDOW_MS = 60_000;
/** Addresses remembered at most; past it the idle ones go first, then everyone shares one bucket. */
const MAX_ADDRESSES = 100_000;
const TOP_ADDRESSES = 5;
const ALL = "*";

interface Bucket {
  tokens: number;
  at: number;
}

export interface RefusalGateOptions {
  perMinute?: number;
  perMinuteAll?: number;
  now?: () => number;
}

export class RefusalGate {
  private readonly buckets = new Map<string, Bucket>();
  private readonly perMinute: number;
  private readonly perMinuteAll: number;
  private readonly now: () => number;
  /** Unlogged refusals of the current summary window, per address. */
  private suppressed = new Map<string, number>();
  private summaryTimer: ReturnType<typeof setTimeout> | null = null;
  private sweptAt = -Infinity;

  constructor(opts: RefusalGateOptions = {}) {
    this.perMinute = opts.perMinute ?? REFUSALS_PER_MINUTE;
    this.perMinuteAll = opts.perMinuteAll ?? REFUSALS_PER_MINUTE_ALL;
    this.now = opts.now ?? (() => performance.now());
  }

  /** No address has spent any budget lately: every request has budget, without asking its address. */
  get untouched(): boolean {
    return this.buckets.size === 0;
  }

  /**
   * Seconds until a refusal from `ip` may be logged again, or null while it has budget. Only reads
   * the buckets: a request that turns out to carry a valid key spends nothing.
   */
  waitFor(ip: string | null): number | null {
    // At most once a second: once everyone's budget is full again, `untouched` lets requests skip this.
    this.sweep();
    const t = this.now();
    const own = this.tokens(this.keyOf(ip), this.perMinute, t);
    const all = this.tokens(ALL, this.perMinuteAll, t);
    if (own >= 1 && all >= 1) return null;
    const waitMs = Math.max(own >= 1 ? 0 : ((1 - own) * 60_000) / this.perMinute, all >= 1 ? 0 : ((1 - all) * 60_000) / this.perMinuteAll);
    return Math.max(1, Math.ceil(waitMs / 1000));
  }

  /** A refusal from `ip` was answered and logged: it spends one from its address's and the shared budget. */
  spend(ip: string | null): void {
    const t = this.now();
    this.take(this.keyOf(ip), this.perMinute, t);
    this.take(ALL, this.perMinuteAll, t);
  }

  /** The 429 of a refusal over budget; counted for the minute's summary, never a row. */
  refuse(ip: string | null, retryAfter: number): GatewayError {
    const who = ip ?? "unknown";
    this.suppressed.set(who, (this.suppressed.get(who) ?? 0) + 1);
    if (!this.summaryTimer) {
      this.summaryTimer = setTimeout(() => this.summarize(), SUMMARY_WINDOW_MS);
      this.summaryTimer.unref?.();
    }
    return new GatewayError(
      "rate_limit",
      `Too many requests without a valid API key from this address. ${retryAfterSentence(retryAfter)}`,
      { retryAfter },
    );
  }

  /** Writes the window's count as one operator event (also at stop, so nothing counted is lost). */
  summarize(): void {
    if (this.summaryTimer) clearTimeout(this.summaryTimer);
    this.summaryTimer = null;
    if (this.suppressed.size === 0) return;
    const counts = [...this.suppressed];
    this.suppressed = new Map();
    const refused = counts.reduce((n, [, c]) => n + c, 0);
    const top = counts.sort((a, b) => b[1] - a[1]).slice(0, TOP_ADDRESSES).map(([ip, c]) => ({ ip, refused: c }));
    events.refusalsSummarized({ refused, addresses: counts.length, top, windowS: SUMMARY_WINDOW_MS / 1000 });
  }

  get size(): number {
    return this.buckets.size;
  }

  private keyOf(ip: string | null): string {
    const key = ip ?? "unknown";
    if (this.buckets.has(key) || this.buckets.size < MAX_ADDRESSES) return key;
    this.sweep();
    return this.buckets.size < MAX_ADDRESSES ? key : ALL;
  }

  private tokens(key: string, perMinute: number, t: number): number {
    const b = this.buckets.get(key);
    return b ? Math.min(perMinute, b.tokens + ((t - b.at) * perMinute) / 60_000) : perMinute;
  }

  private take(key: string, perMinute: number, t: number): void {
    // Not below zero: refusals that were already under way when the budget ran out do not lengthen the wait.
    this.buckets.set(key, { tokens: Math.max(0, this.tokens(key, perMinute, t) - 1), at: t });
  }

  // A bucket idle for a minute is full again, the same as no bucket. At most once a second: with every
  // address active, a sweep per request would cost O(addresses) each.
  private sweep(): void {
    const t = this.now();
    if (t - this.sweptAt < 1000) return;
    this.sweptAt = t;
    // The shared bucket too: an empty map tells the hot path that no address needs asking (untouched).
    for (const [k, b] of this.buckets) if (t - b.at > 60_000) this.buckets.delete(k);
  }
}
