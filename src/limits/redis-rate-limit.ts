import { RedisClient } from "bun";
import { createHash } from "node:crypto";
import { GatewayError } from "../core/errors.ts";
import { events } from "../logs/events.ts";
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

  take(id: string, rpm: number, what: string): Promise<Bucket> {
    return this.takeAll([{ id, rpm, what }]);
  }

  async takeAll(takes: readonly Take[]): Promise<Bucket> {
    let reply: unknown;
    try {
      reply = await this.withTimeout(this.run(takes));
    } catch (e) {
      throw this.unavailable(e);
    }
    if (!Array.isArray(reply) || reply.length !== takes.length + 1 || !reply.every((n) => typeof n === "number")) {
      throw this.unavailable(new Error(`unexpected reply to the rate limit script: ${JSON.stringify(reply)?.slice(0, 80)}`));
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

  close(): void {
    this.client.close();
  }

  private async run(takes: readonly Take[]): Promise<unknown> {
    if (!this.client.connected) {
      await (this.connecting ??= this.client.connect().finally(() => {
        this.connecting = null;
      }));
    }
    const args = [SHA, String(takes.length), ...takes.map((x) => this.prefix + x.id), String(UNITS_PER_TOKEN), ...takes.map((x) => String(x.rpm))];
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
