import { RedisClient } from "bun";
import { createHash } from "node:crypto";
import { GatewayError } from "../core/errors.ts";
import { events } from "../core/events.ts";

/** Long enough for a store on the same network; short enough that an outage answers quickly. */
export const STORE_TIMEOUT_MS = 250;

/** A Lua script run by its SHA1, loaded again when the store has forgotten it. */
export class Script {
  readonly sha: string;
  constructor(readonly text: string) {
    this.sha = createHash("sha1").update(text).digest("hex");
  }
}

/**
 * The connection to `[limits] store` (Redis or Valkey) that the token buckets (redis-rate-limit.ts)
 * and the dashboard's throttles (throttle.ts) share. Every command is bounded by the timeout: what
 * the store does not answer in time (down, refusing, overloaded) is a 503 rate_limit_unavailable,
 * so nothing the limits count is ever let through uncounted.
 */
export class RedisStore {
  private readonly client: RedisClient;
  private connecting: Promise<void> | null = null;

  constructor(
    url: string,
    readonly timeoutMs = STORE_TIMEOUT_MS,
  ) {
    // No offline queue: while the store is away a command fails at once instead of waiting in a queue
    // that would let a burst through when it is back. No reconnect of the client's own: the next
    // command reconnects (send), so an outage of any length ends when the store answers again.
    this.client = new RedisClient(url, { enableOfflineQueue: false, autoReconnect: false, connectionTimeout: timeoutMs });
  }

  /** Runs `script` on `keys` and `args`; a failure or a late answer is thrown as 503 rate_limit_unavailable. */
  eval(script: Script, keys: string[], args: string[]): Promise<unknown> {
    return this.bounded(async () => {
      const argv = [script.sha, String(keys.length), ...keys, ...args];
      try {
        return await this.client.send("EVALSHA", argv);
      } catch (e) {
        // A store restarted, failed over or flushed has forgotten the script: load it again, once.
        if (!(e instanceof Error) || !e.message.startsWith("NOSCRIPT")) throw e;
        await this.client.send("SCRIPT", ["LOAD", script.text]);
        return this.client.send("EVALSHA", argv);
      }
    });
  }

  /** One command, bounded and failing as `eval` does. */
  send(command: string, args: string[]): Promise<unknown> {
    return this.bounded(() => this.client.send(command, args));
  }

  close(): void {
    this.client.close();
  }

  /** The 503 of an answer that is not the script's: counted as a failure of the store. */
  unavailable(cause: unknown): GatewayError {
    events.limitStoreFailed(cause);
    return new GatewayError("rate_limit_unavailable", "The rate limit store is unavailable, so this request could not be counted. Retry in 1 second.", {
      retryAfter: 1,
      cause,
    });
  }

  // A command that comes back after its timeout may still have counted: counted and refused, which
  // errs on the side the operator asked for.
  private async bounded<T>(run: () => Promise<T>): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${this.timeoutMs} ms`)), this.timeoutMs);
    });
    try {
      return await Promise.race([this.connected().then(run), late]);
    } catch (e) {
      throw e instanceof GatewayError ? e : this.unavailable(e);
    } finally {
      clearTimeout(timer);
    }
  }

  private async connected(): Promise<void> {
    if (this.client.connected) return;
    await (this.connecting ??= this.client.connect().finally(() => {
      this.connecting = null;
    }));
  }
}
