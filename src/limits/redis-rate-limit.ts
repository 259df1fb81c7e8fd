import { RedisClient } from "bun";
import { createHash } from "node:crypto";
import { GatewayError } from "../core/errors.ts";
import { events } from "../logs/events.ts";
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
const SHA = createHash("sha1").update(SCRIPT).digest("hex");

/** Long enough for a store on the same network; short enough that an outage answers quickly. */
export const STORE_TIMEOUT_MS = 250;

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
  private readonly client: RedisClient;
  private readonly timeoutMs: number;
  private readonly prefix: string;
  private connecting: Promise<void> | null = null;

  constructor(url: string, opts: RedisLimiterOptions = {}) {
    this.timeoutMs = opts.timeoutMs ?? STORE_TIMEOUT_MS;
    this.prefix = opts.prefix ?? "gateway:rl:";
    // No offline queue: while the store is away a take fails at once instead of waiting in a queue
    // that would let a burst through when it is back. No reconnect of the client's own: the next
    // take reconnects (run), so an outage of any length ends when the store answers again.
    this.client = new RedisClient(url, { enableOfflineQueue: false, autoReconnect: false, connectionTimeout: this.timeoutMs });
  }

  async take(id: string, rpm: number, what: string): Promise<Bucket> {
    let reply: unknown;
    try {
      reply = await this.withTimeout(this.run(this.prefix + id, rpm));
    } catch (e) {
      throw this.unavailable(e);
    }
    if (!Array.isArray(reply) || typeof reply[0] !== "number" || typeof reply[1] !== "number") {
      throw this.unavailable(new Error(`unexpected reply to the rate limit script: ${JSON.stringify(reply)?.slice(0, 80)}`));
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
    this.client.close();
  }

  private async run(key: string, rpm: number): Promise<unknown> {
    if (!this.client.connected) {
      await (this.connecting ??= this.client.connect().finally(() => {
        this.connecting = null;
      }));
    }
    const args = [SHA, "1", key, String(rpm), String(UNITS_PER_TOKEN)];
    try {
      return await this.client.send("EVALSHA", args);
    } catch (e) {
      // A store restarted, failed over or flushed has forgotten the script: load it again, once.
      if (!(e instanceof Error) || !e.message.startsWith("NOSCRIPT")) throw e;
      await this.client.send("SCRIPT", ["LOAD", SCRIPT]);
      return this.client.send("EVALSHA", args);
    }
  }

  // A take that comes back after its timeout may still have spent a request of the bucket: counted
  // and refused, which errs on the side the operator asked for.
  private withTimeout<T>(p: Promise<T>): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${this.timeoutMs} ms`)), this.timeoutMs);
    });
    return Promise.race([p, late]).finally(() => clearTimeout(timer));
  }

  private unavailable(cause: unknown): GatewayError {
    events.limitStoreFailed(cause);
    return new GatewayError("rate_limit_unavailable", "The rate limit store is unavailable, so this request could not be counted. Retry in 1 second.", {
      retryAfter: 1,
      cause,
    });
  }
}
