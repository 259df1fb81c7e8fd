import { RedisStore, Script } from "./redis-store.ts";
import { bucketHeaders, refusal, UNITS_PER_TOKEN, type Bucket, type Limiter } from "./rate-limit.ts";

// The token bucket of rate-limit.ts, in one atomic script so that concurrent takes from several
// instances never both spend the last request. The same whole units (UNITS_PER_TOKEN a request,
// rpm of them gained per millisecond) on Redis's own clock (TIME), so instances whose clocks
// disagree still agree on every bucket. A bucket idle for a minute is full again, the same as
// none: its key expires then. A clock that went back (a failover) refills nothing rather than
// taking away.
const SCRIPT = `
local rpm = tonumber(ARGV[1])
local per = tonumber(ARGV[2])
local capacity = rpm * per
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local held = redis.call('HMGET', KEYS[1], 'units', 'at')
local units = capacity
if held[1] and held[2] then
  units = math.min(capacity, tonumber(held[1]) + math.max(0, now - tonumber(held[2])) * rpm)
end
local taken = 0
if units >= per then
  units = units - per
  taken = 1
end
redis.call('HSET', KEYS[1], 'units', units, 'at', now)
redis.call('PEXPIRE', KEYS[1], 60000)
return {taken, units}
`;
const BUCKET = new Script(SCRIPT);

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

  async take(id: string, rpm: number, what: string): Promise<Bucket> {
    const reply = await this.store.eval(BUCKET, [this.prefix + id], [String(rpm), String(UNITS_PER_TOKEN)]);
    if (!Array.isArray(reply) || typeof reply[0] !== "number" || typeof reply[1] !== "number") {
      throw this.store.unavailable(new Error(`unexpected reply to the rate limit script: ${JSON.stringify(reply)?.slice(0, 80)}`));
    }
    const b: Bucket = { units: reply[1], at: performance.now(), rpm };
    if (reply[0] !== 1) throw refusal(b, what, this.withHeaders(new Headers(), b));
    return b;
  }

  /** The bucket as the store left it, refilled on this process's clock since its answer. */
  withHeaders(h: Headers, b: Bucket): Headers {
    return bucketHeaders(h, b, performance.now());
  }

  close(): void {
    if (this.owned) this.store.close();
  }
}
