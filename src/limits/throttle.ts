import { randomUUID } from "node:crypto";
import type { Awaitable } from "../core/awaitable.ts";
import { GatewayError } from "../core/errors.ts";
import { retryAfterSentence } from "./rate-limit.ts";
import { RedisStore, Script } from "./redis-store.ts";

/**
 * At most `limit` attempts per key in any window of `windowMs` (a sliding log): the login and
 * registration throttles of the dashboard (docs/dashboard.md#throttles). `take` checks and counts in
 * one step, before the attempt does anything that awaits: a check that counted after an Argon2id
 * hash let every request in flight through (100 parallel wrong passwords, 100 checked).
 */
export interface Throttle {
  readonly limit: number;
  readonly windowMs: number;
  /** Counts one attempt of `key`, or refuses with 429 rate_limit and Retry-After (counting nothing) when it has none left. */
  take(key: string, what: string): Awaitable<Attempt>;
  /** Gives back one attempt `take` counted (one that turned out not to be what the throttle counts). */
  refund(attempt: Attempt): Awaitable<void>;
  /** Forgets all of `key`'s attempts (a login that succeeded). */
  clear(key: string): Awaitable<void>;
}

/** One counted attempt, for `refund`. */
export interface Attempt {
  key: string;
  id: string;
}

export function tooMany(what: string, retryMs: number): GatewayError {
  const retryAfter = Math.max(1, Math.ceil(retryMs / 1000));
  return new GatewayError("rate_limit", `Too many ${what}. ${retryAfterSentence(retryAfter)}`, { retryAfter });
}

/**
 * The throttle in this process's memory, like the token buckets without `[limits] store`: a restart
 * forgives everyone, and each process counts its own. Synchronous, so a take is atomic.
 */
export class MemoryThrottle implements Throttle {
  private readonly log = new Map<string, { at: number; id: string }[]>();
  private sweptAt = 0;
  private next = 0;

  constructor(
    readonly limit: number,
    readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  take(key: string, what: string): Attempt {
    const t = this.now();
    if (t - this.sweptAt > this.windowMs) this.sweep(t);
    const times = this.live(key, t);
    if (times.length >= this.limit) throw tooMany(what, times[0]!.at + this.windowMs - t);
    const id = String(++this.next);
    times.push({ at: t, id });
    this.log.set(key, times);
    return { key, id };
  }

  refund(attempt: Attempt): void {
    const times = this.log.get(attempt.key);
    const i = times?.findIndex((x) => x.id === attempt.id) ?? -1;
    if (i !== -1) times!.splice(i, 1);
  }

  clear(key: string): void {
    this.log.delete(key);
  }

  get size(): number {
    return this.log.size;
  }

  private live(key: string, t: number) {
    const times = (this.log.get(key) ?? []).filter((x) => t - x.at < this.windowMs);
    if (times.length === 0) this.log.delete(key);
    return times;
  }

  // Keys whose last attempt is out of the window hold nothing: dropped, so made-up emails cannot grow the map.
  private sweep(t: number): void {
    this.sweptAt = t;
    for (const [key, times] of this.log) if (times.length === 0 || t - times.at(-1)!.at >= this.windowMs) this.log.delete(key);
  }
}

// The sliding log as a sorted set (score: the store's clock in ms, TIME, so instances whose clocks
// disagree still agree), pruned, checked and added to in one script: two instances never both take
// the last attempt. The set expires with its newest attempt's window.
const TAKE = new Script(`
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= limit then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, tonumber(oldest[2]) + window - now}
end
redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('PEXPIRE', KEYS[1], window)
return {1, 0}
`);

/**
 * The throttle in `[limits] store`, shared by every instance that names it: 5 failed logins are 5
 * across all of them. Like the token buckets, a take the store does not answer is refused with 503
 * rate_limit_unavailable: nothing is let through uncounted. Keys are hashed (the store never holds
 * an email).
 */
export class RedisThrottle implements Throttle {
  constructor(
    private readonly store: RedisStore,
    private readonly name: string,
    readonly limit: number,
    readonly windowMs: number,
    private readonly prefix = "gateway:th:",
  ) {}

  async take(key: string, what: string): Promise<Attempt> {
    const id = randomUUID();
    const reply = await this.store.eval(TAKE, [this.keyOf(key)], [String(this.limit), String(this.windowMs), id]);
    if (!Array.isArray(reply) || typeof reply[0] !== "number" || typeof reply[1] !== "number") {
      throw this.store.unavailable(new Error(`unexpected reply to the throttle script: ${JSON.stringify(reply)?.slice(0, 80)}`));
    }
    if (reply[0] !== 1) throw tooMany(what, reply[1]);
    return { key, id };
  }

  // A refund or clear the store misses leaves attempts counted: the safe side, so it is logged (as
  // rate_limit_store_failed, by the store) and not thrown.
  async refund(attempt: Attempt): Promise<void> {
    await this.store.send("ZREM", [this.keyOf(attempt.key), attempt.id]).catch(() => {});
  }

  async clear(key: string): Promise<void> {
    await this.store.send("DEL", [this.keyOf(key)]).catch(() => {});
  }

  private keyOf(key: string): string {
    return `${this.prefix}${this.name}:${new Bun.CryptoHasher("sha256").update(key).digest("base64url").slice(0, 22)}`;
  }
}

const MINUTE = 60_000;

/** The throttles of docs/dashboard.md#throttles. */
export interface AccountThrottles {
  /** Login attempts per address (an IPv6 /64), failed or not. */
  loginPerIp: Throttle;
  /** Failed logins (and failed current passwords) per account email; a login that succeeds clears it. */
  loginPerAccount: Throttle;
  /**
   * Wrong second-factor codes per account (login's second step, enabling and disabling two-factor
   * login); a right code clears it. Apart from loginPerAccount, which a right password clears: one
   * throttle would let whoever knows the password reset the count of guessed codes at each login.
   */
  secondFactorPerAccount: Throttle;
  /** Registrations per address (an IPv6 /64), refused or not. */
  registerPerIp: Throttle;
  /** Registration attempts per email. */
  registerPerEmail: Throttle;
  /** Refused redemption codes per account (a code that credits gives its attempt back). */
  redeemPerAccount: Throttle;
  /** Refused redemption codes per address (an IPv6 /64), redemptions and invited registrations alike. */
  redeemPerIp: Throttle;
  /** Password reset requests per address (an IPv6 /64), for accounts that exist or not. */
  forgotPerIp: Throttle;
  /** Password reset requests per email asked about, whether an account has it or not. */
  forgotPerEmail: Throttle;
  /** Reset and change-of-email requests of the whole gateway (one key): what they can make it mail in an hour. */
  linkMails: Throttle;
}

const LIMITS: Record<keyof AccountThrottles, [limit: number, windowMs: number]> = {
  loginPerIp: [20, 10 * MINUTE],
  loginPerAccount: [5, 15 * MINUTE],
  secondFactorPerAccount: [5, 15 * MINUTE],
  registerPerIp: [10, 60 * MINUTE],
  registerPerEmail: [5, 60 * MINUTE],
  redeemPerAccount: [10, 60 * MINUTE],
  redeemPerIp: [20, 60 * MINUTE],
  forgotPerIp: [10, 60 * MINUTE],
  forgotPerEmail: [5, 60 * MINUTE],
  linkMails: [300, 60 * MINUTE],
};

/** The throttles in `store` when `[limits] store` is set, shared by the instances; else in this process. */
export function accountThrottles(store: RedisStore | null, prefix?: string): AccountThrottles {
  const one = (name: keyof AccountThrottles) => {
    const [limit, windowMs] = LIMITS[name];
    return store ? new RedisThrottle(store, name, limit, windowMs, prefix) : new MemoryThrottle(limit, windowMs);
  };
  return {
    loginPerIp: one("loginPerIp"),
    loginPerAccount: one("loginPerAccount"),
    secondFactorPerAccount: one("secondFactorPerAccount"),
    registerPerIp: one("registerPerIp"),
    registerPerEmail: one("registerPerEmail"),
    redeemPerAccount: one("redeemPerAccount"),
    redeemPerIp: one("redeemPerIp"),
    forgotPerIp: one("forgotPerIp"),
    forgotPerEmail: one("forgotPerEmail"),
    linkMails: one("linkMails"),
  };
}
