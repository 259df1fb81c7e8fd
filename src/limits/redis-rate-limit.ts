import { RedisStore, Script } from "./redis-store.ts";
import { bucketHeaders, refusal, tightest, UNITS_PER_TOKEN, type Bucket, type Limiter, type Take } from "./rate-limit.ts";

// The token buckets of rate-limit.ts, in one atomic script so that concurrent takes from several
// instances never both spend the last request. The same whole units (UNITS_PER_TOKEN a request,
// rpm of them gained per millisecond) on Redis's own clock (TIME), so instances whose clocks
// disagree still agree on every bucket. A request takes from all its buckets (its key's, its
// account's) or from none, as RateLimiter.takeAll does: the refused one is the one that refills
// last. A bucket idle for a minute is full again, the same as none: its key expires then. A clock
// that went back (a failover) refills nothing rather than taking away.
// KEYS: the buckets; ARGV[1]: units per request; ARGV[1 + i]: the rpm of KEYS[i].
// Returns {index of the refusing bucket or 0, units left in each bucket...}.
const SCRIPT = `
local per = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local units = {}
local short = 0
local worst = -1
for i, key in ipairs(KEYS) do
  local rpm = tonumber(ARGV[i + 1])
  local capacity = rpm * per
  local held = redis.call('HMGET', key, 'units', 'at')
  local u = capacity
  if held[1] and held[2] then
    u = math.min(capacity, tonumber(held[1]) + math.max(0, now - tonumber(held[2])) * rpm)
  end
  units[i] = u
  if u < per and (per - u) / rpm > worst then
    worst = (per - u) / rpm
    short = i
  end
end
local reply = {short}
for i, key in ipairs(KEYS) do
  if short == 0 then units[i] = units[i] - per end
  redis.call('HSET', key, 'units', units[i], 'at', now)
  redis.call('PEXPIRE', key, 60000)
  reply[i + 1] = units[i]
end
return reply
`;
const BUCKETS = new Script(SCRIPT);

export interface RedisLimiterOptions {
  timeoutMs?: number;
  /** Namespaces the keys, so that one Redis can serve other things (and other gateways) too. */
  prefix?: string;
}

/**
 * The token buckets in Redis or Valkey (`[limits] store`), shared by every instance that names the
 * same store: 20 requests a minute are 20 across all of them. A take that the store does not answer
 * within the timeout (down, refusing, overloaded) is refused with 503: never let through uncounted.
 */
export class RedisRateLimiter implements Limiter {
  private readonly store: RedisStore;
  private readonly owned: boolean;
  private readonly prefix: string;

  /** `store`: a connection shared with the dashboard's throttles, or a URL for one of its own. */
  constructor(store: RedisStore | string, opts: RedisLimiterOptions = {}) {
    this.owned = typeof store === "string";
    this.store = typeof store === "string" ? new RedisStore(store, opts.timeoutMs) : store;
    this.prefix = opts.prefix ?? "gateway:rl:";
  }

  take(id: string, rpm: number, what: string): Promise<Bucket> {
    return this.takeAll([{ id, rpm, what }]);
  }

  async takeAll(takes: readonly Take[]): Promise<Bucket> {
    const keys = takes.map((x) => this.prefix + x.id);
    const reply = await this.store.eval(BUCKETS, keys, [String(UNITS_PER_TOKEN), ...takes.map((x) => String(x.rpm))]);
    if (!Array.isArray(reply) || reply.length !== takes.length + 1 || !reply.every((n) => typeof n === "number")) {
      throw this.store.unavailable(new Error(`unexpected reply to the rate limit script: ${JSON.stringify(reply)?.slice(0, 80)}`));
    }
    const at = performance.now();
    const buckets = takes.map((x, i): Bucket => ({ units: reply[i + 1] as number, at, rpm: x.rpm }));
    const short = (reply[0] as number) - 1;
    if (short >= 0) throw refusal(buckets[short]!, takes[short]!.what, this.withHeaders(new Headers(), buckets[short]!));
    return tightest(buckets);
  }

  /** The bucket as the store left it, refilled on this process's clock since its answer. */
  withHeaders(h: Headers, b: Bucket): Headers {
    return bucketHeaders(h, b, performance.now());
  }

  /**
   * The store takes a write within the timeout, or this is the 503 every key request gets meanwhile.
   * A write, not a PING: a replica left read-only by a failover, or a store out of memory under
   * noeviction, answers PING yet refuses every take.
   */
  async ready(): Promise<void> {
    await this.store.send("SET", [`${this.prefix}ready`, "1", "PX", "10000"]);
  }

  close(): void {
    if (this.owned) this.store.close();
  }
}
