import pino from "pino";

// The operator's event log: one JSON line per event on stderr (stdout is the access log's). An event
// is what an operator must act on: a 5xx the gateway answered, an upstream attempt that failed, a
// provider refusing the gateway's own key, a request log row that could not be written. Lines carry
// ids, route keys, provider ids, statuses and short reasons: never content, never a key, never a
// vendor's error text (OpenAI's 401 text quotes part of the key).
//
// A failure that repeats per request must not flood the disk it may be filling (a full
// disk once printed 35 000 stack traces, 17 MB in 6 s): each kind of event writes at most
// EVENTS_PER_WINDOW lines per EVENT_WINDOW_MS, then one line saying how many more were suppressed;
// a stack trace is written once per distinct message, not per request.

export const EVENT_WINDOW_MS = 10_000;
export const EVENTS_PER_WINDOW = 20;
const MAX_REASON = 300;
const MAX_STACKS_REMEMBERED = 1_000;

type Level = "info" | "warn" | "error";

interface Window {
  start: number;
  written: number;
  suppressed: number;
  timer: ReturnType<typeof setTimeout> | null;
}

export interface UpstreamFailure {
  requestId: string;
  /** The upstream route key, provider/upstream-model. */
  route: string;
  provider: string;
  /** The HTTP status the upstream answered, when it answered. */
  upstreamStatus?: number;
  /** Short and content-free: "HTTP 503 overloaded_error", "timeout: no answer within 100 ms", "ConnectionRefused". */
  reason: string;
}

export interface GatewayErrorEvent {
  requestId: string;
  status: number;
  code: string;
  route?: string;
  provider?: string;
  upstreamStatus?: number;
  /** What was thrown, for an error the gateway did not expect (internal_error, database_unavailable). */
  cause?: unknown;
}

/** A key's budget refused its first request of a period (once per key and period, across instances). */
export interface BudgetReached {
  accountId: number;
  keyId: number;
  budgetNano: number;
  period: "day" | "week" | "month";
  /** When the period ends (unix ms). */
  resetsAt: number;
}

export interface EventLogOptions {
  windowMs?: number;
  perWindow?: number;
  now?: () => number;
}

export class EventLog {
  private readonly logger: pino.Logger;
  private write: (line: string) => void;
  private readonly windows = new Map<string, Window>();
  private readonly stacksWritten = new Set<string>();
  private readonly windowMs: number;
  private readonly perWindow: number;
  private readonly now: () => number;
  private readonly budgetListeners = new Set<(b: BudgetReached) => void>();
  /** A refusal of the current pause has been written (refusedWhilePaused). */
  private pauseNoted = false;

  constructor(write: (line: string) => void, opts: EventLogOptions = {}) {
    this.write = write;
    this.windowMs = opts.windowMs ?? EVENT_WINDOW_MS;
    this.perWindow = opts.perWindow ?? EVENTS_PER_WINDOW;
    this.now = opts.now ?? Date.now;
    this.logger = pino(
      {
        base: null,
        timestamp: pino.stdTimeFunctions.isoTime,
        formatters: { level: (label) => ({ level: label }) },
      },
      { write: (line: string) => this.write(line) },
    );
  }

  /** Sends the lines elsewhere, with fresh rate windows, until the returned function is called (tests read them). */
  redirect(write: (line: string) => void): () => void {
    const before = this.write;
    this.resetWindows();
    this.write = write;
    return () => {
      this.resetWindows();
      this.write = before;
    };
  }

  private resetWindows(): void {
    for (const w of this.windows.values()) if (w.timer) clearTimeout(w.timer);
    this.windows.clear();
  }

  /** One failed attempt of a route: it answered an error, or could not be reached or read in time. */
  upstreamFailed(f: UpstreamFailure): void {
    this.emit("warn", "upstream_failed", f.route, {
      request_id: f.requestId,
      route: f.route,
      provider: f.provider,
      upstream_status: f.upstreamStatus,
      reason: short(f.reason),
    }, `upstream route ${f.route} failed: ${short(f.reason)}`);
  }

  /** The provider refused the gateway's own credentials: the operator's configuration, not the client. */
  /** `keyIndex`: which of the provider's `api_keys` it was; absent for a provider with one `api_key`. */
  providerKeyRejected(f: UpstreamFailure & { providerIndex: number; keyIndex?: number }): void {
    const field = f.keyIndex === undefined ? "api_key" : `api_keys[${f.keyIndex}]`;
    this.emit("error", "provider_key_rejected", f.provider, {
      request_id: f.requestId,
      route: f.route,
      provider: f.provider,
      upstream_status: f.upstreamStatus,
      ...(f.keyIndex === undefined ? {} : { key_index: f.keyIndex }),
      reason: short(f.reason),
    }, `the provider rejected the gateway's key for provider ${f.provider}: check providers[${f.providerIndex}].${field}`);
  }

  /**
   * A key request refused because the product is paused: the first refusal of a pause writes one
   * line, the others none (a paused product refuses every request, and each is the operator's own
   * doing, not a failure). servedAgain writes the pause's end.
   */
  refusedWhilePaused(requestId: string): void {
    if (this.pauseNoted) return;
    this.pauseNoted = true;
    this.emit("warn", "product_paused", "", { request_id: requestId }, "the product is paused: key requests answer 503 product_paused until gateway resume");
  }

  /** A key request got past the pause switch: after a pause this process noted, one line saying it ended. */
  servedAgain(): void {
    if (!this.pauseNoted) return;
    this.pauseNoted = false;
    this.emit("info", "product_resumed", "", {}, "the product is resumed: key requests are served again");
  }

  /** A 5xx the gateway answered. The stack of an unexpected error is written once per distinct message. */
  gatewayError(e: GatewayErrorEvent): void {
    const cause = e.cause === undefined ? null : describe(e.cause);
    const reason = cause ?? e.code;
    const fields: Record<string, unknown> = {
      request_id: e.requestId,
      status: e.status,
      code: e.code,
      route: e.route,
      provider: e.provider,
      upstream_status: e.upstreamStatus,
      reason,
    };
    if (cause && e.code === "internal_error" && e.cause instanceof Error && e.cause.stack && this.firstStackOf(cause)) fields.stack = stackOf(e.cause);
    this.emit(e.status === 500 ? "error" : "warn", "gateway_error", e.code, fields, `answered ${e.status} ${e.code}${cause ? `: ${cause}` : ""}`);
  }

  /**
   * A row that could not be written (request_log: the request id is then only here; idempotency: a
   * retry with the same key runs again instead of replaying; ledger: a streamed answer went out
   * uncharged; settings: the estimator's windows, kept in memory and tried again). The answer itself has gone out.
   */
  writeFailed(table: "request_log" | "idempotency" | "ledger" | "settings", requestId: string, cause: unknown): void {
    const reason = describe(cause);
    this.emit("error", `${table}_write_failed`, "", { request_id: requestId, reason }, `${table} row of ${requestId} not written: ${reason}`);
  }

  /** The hourly retention job failed (the database refused); it runs again in an hour. */
  pruneFailed(cause: unknown): void {
    const reason = describe(cause);
    this.emit("error", "retention_failed", "", { reason }, `pruning old request logs and idempotency records failed: ${reason}`);
  }

  /**
   * The shared rate limit store (`[limits] store`, Redis or Valkey) failed a take: down, refusing or
   * slower than its timeout. Key requests are answered 503 until it answers again (each one's request
   * id is on its gateway_error line); never the store's URL, which may carry its password.
   */
  limitStoreFailed(cause: unknown): void {
    const reason = describe(cause);
    this.emit("error", "rate_limit_store_failed", "", { reason },
      `the rate limit store failed a take (${reason}): key requests, dashboard logins and registrations are refused with 503 rate_limit_unavailable until it answers again`);
  }

  /**
   * Refusals without a valid key that got no request log row (limits/refusals.ts), summed over a
   * minute: how many, from how many addresses, and the busiest ones, so an operator can block them.
   */
  refusalsSummarized(s: { refused: number; addresses: number; top: { ip: string; refused: number }[]; windowS: number }): void {
    this.emit("warn", "refusals_summarized", "", { refused: s.refused, addresses: s.addresses, top: s.top, window_s: s.windowS },
      `${s.refused} refused requests without a valid API key from ${s.addresses} address(es) in ${s.windowS} s were not logged one by one`);
  }

  /**
   * A paid Checkout Session the gateway refused to credit (its amount or currency is not the one the
   * gateway asked Stripe for): the holder paid and has no credit until the operator looks.
   */
  paymentNotCredited(p: { session: string; event: string; accountId: number; reason: string }): void {
    this.emit("error", "payment_not_credited", "", { session: p.session, stripe_event: p.event, account_id: p.accountId, reason: short(p.reason) },
      `Checkout Session ${p.session} of account ${p.accountId} was not credited: ${short(p.reason)}`);
  }

  /**
   * A Stripe webhook whose signature checked out but whose body is not an event of the shape Stripe
   * sends: refused with 400, nothing credited. Either the webhook secret is in other hands or Stripe's
   * events changed; a payment it was about stays uncredited until the operator looks. The reason names
   * a field, never a value (the body carries the holder's email).
   */
  stripeEventMalformed(m: { event: string | null; reason: string }): void {
    this.emit("error", "stripe_event_malformed", "", { stripe_event: m.event === null ? null : short(m.event), reason: short(m.reason) },
      `a signed Stripe webhook${m.event === null ? "" : ` (event ${short(m.event)})`} was refused as malformed: ${short(m.reason)}`);
  }

  /**
   * Another gateway instance on the shared PostgreSQL database went silent for [cluster] hold_timeout_s
   * (crashed, cut off or frozen): this instance released the holds of its running requests, so that
   * their money is spendable again. Whatever those requests still post is charged without a hold.
   */
  holdsReleased(r: { instance: string; holds: number; nano: number; timeoutS: number }): void {
    this.emit("warn", "holds_released", "", { instance: r.instance, holds: r.holds, held_nano: r.nano, timeout_s: r.timeoutS },
      `instance ${r.instance} was silent for ${r.timeoutS} s: ${r.holds} hold(s) of its running requests released`);
  }

  /**
   * This instance could not write its heartbeat for nearly [cluster] hold_timeout_s (or found that
   * another instance had released it): it stops relying on its holds before anyone may release them.
   * Paid requests are refused 503 database_unavailable and those in flight are ended, free, until a
   * heartbeat succeeds again.
   */
  instanceFenced(r: { instance: string; reason: string }): void {
    this.emit("warn", "instance_fenced", "", { instance: r.instance, reason: short(r.reason) },
      `instance ${r.instance} stopped serving paid requests: ${short(r.reason)}`);
  }

  /** A heartbeat succeeded after a fence: the holds it had left were released and it serves again. */
  instanceResumed(r: { instance: string; holds: number; nano: number }): void {
    this.emit("warn", "instance_resumed", "", { instance: r.instance, holds: r.holds, held_nano: r.nano },
      `instance ${r.instance} serves again; ${r.holds} hold(s) it had left released`);
  }

  /**
   * A key's budget that resets was reached: a request was refused for it, the first of its period.
   * The line is the operator's; `onBudgetReached` is the hook for notices sent elsewhere (email, a
   * webhook), told once per key and period whoever refuses, never on a request's path (a listener's
   * error is logged, not thrown).
   */
  budgetReached(b: BudgetReached): void {
    this.emit("warn", "budget_reached", String(b.keyId), {
      account_id: b.accountId,
      key_id: b.keyId,
      budget_nano: b.budgetNano,
      period: b.period,
      resets_at: new Date(b.resetsAt).toISOString(),
    }, `key ${b.keyId} reached its ${{ day: "daily", week: "weekly", month: "monthly" }[b.period]} budget; it resets at ${new Date(b.resetsAt).toISOString()}`);
    for (const fn of this.budgetListeners) {
      try {
        fn(b);
      } catch (e) {
        this.emit("error", "budget_notice_failed", "", { key_id: b.keyId, reason: describe(e) }, `a budget_reached listener failed: ${describe(e)}`);
      }
    }
  }

  /** Calls `fn` on every budgetReached until the returned function is called. */
  onBudgetReached(fn: (b: BudgetReached) => void): () => void {
    this.budgetListeners.add(fn);
    return () => this.budgetListeners.delete(fn);
  }

  /**
   * An email or a webhook event that could not be delivered after its retries (docs/operations.md#email-and-notifications).
   * The request that caused it was answered as usual. Never the SMTP URL (it carries the password)
   * nor the address: the account id says whose it was.
   */
  noticeFailed(n: { channel: "email" | "webhook"; type: string; accountId: number | null; attempts: number; reason: string }): void {
    this.emit("error", "notice_failed", n.channel, { channel: n.channel, type: n.type, account_id: n.accountId, attempts: n.attempts, reason: short(n.reason) },
      `${n.channel === "email" ? "an email" : "a webhook event"} (${n.type}) was not delivered after ${n.attempts} attempt(s): ${short(n.reason)}`);
  }

  /**
   * A key's rest could not be told to the other instances (docs/scaling.md#provider-keys-rests): they learn
   * it from their own next call to it. The request that met the rest was answered as usual.
   */
  restNotShared(r: { provider: string; cause: unknown }): void {
    const reason = describe(r.cause);
    this.emit("warn", "rest_not_shared", r.provider, { provider: r.provider, reason: short(reason) },
      `a rest of a key of provider ${r.provider} was not told to the other instances: ${short(reason)}`);
  }

  private firstStackOf(message: string): boolean {
    if (this.stacksWritten.has(message)) return false;
    // Bounded: an error whose message varies per request would otherwise grow this forever.
    if (this.stacksWritten.size >= MAX_STACKS_REMEMBERED) return false;
    this.stacksWritten.add(message);
    return true;
  }

  private emit(level: Level, event: string, discriminator: string, fields: Record<string, unknown>, msg: string): void {
    const kind = discriminator ? `${event}:${discriminator}` : event;
    const t = this.now();
    let w = this.windows.get(kind);
    if (w && t - w.start >= this.windowMs) {
      this.flush(kind);
      w = undefined;
    }
    if (!w) {
      w = { start: t, written: 0, suppressed: 0, timer: null };
      this.windows.set(kind, w);
    }
    if (w.written < this.perWindow) {
      w.written++;
      this.logger[level]({ event, ...fields }, msg);
      return;
    }
    w.suppressed++;
    if (!w.timer) {
      // The count is written when the window closes, even if no event of this kind comes after it.
      w.timer = setTimeout(() => this.flush(kind), Math.max(0, w.start + this.windowMs - t));
      w.timer.unref?.();
    }
  }

  private flush(kind: string): void {
    const w = this.windows.get(kind);
    if (!w) return;
    this.windows.delete(kind);
    if (w.timer) clearTimeout(w.timer);
    if (w.suppressed === 0) return;
    this.logger.warn(
      { event: "events_suppressed", kind, suppressed: w.suppressed, window_s: this.windowMs / 1000 },
      `${w.suppressed} more like this suppressed (${kind})`,
    );
  }
}

/**
 * A failed query (Drizzle's DrizzleQueryError, on either engine) as its statement and its database's
 * reason. Its own message ends with the query's parameters, which are the request's emails, notes,
 * password hashes and key hashes: those never reach the event log.
 */
function failedQuery(err: Error): string | null {
  const q = err as { query?: unknown; params?: unknown; cause?: unknown };
  if (typeof q.query !== "string" || !Array.isArray(q.params)) return null;
  return `Failed query${q.cause === undefined ? "" : ` (${describe(q.cause)})`}: ${q.query}`;
}

/** An error's stack with its message as describe gives it: a failed query's parameters left out. */
export function stackOf(err: Error): string {
  const safe = failedQuery(err);
  if (safe === null) return err.stack!;
  const frames = err.stack!.split("\n").filter((l) => /^\s+at /.test(l));
  return [`${err.name}: ${safe}`, ...frames].join("\n");
}

/** "SQLITE_FULL: database or disk is full": the code first, one line, bounded. */
export function describe(err: unknown): string {
  if (err instanceof Error) {
    const query = failedQuery(err);
    if (query !== null) return short(query);
    const code = (err as { code?: unknown }).code;
    const text = typeof code === "string" && code && !err.message.startsWith(code) ? `${code}: ${err.message}` : err.message || err.name;
    return short(text);
  }
  return short(String(err));
}

function short(s: string): string {
  // Bun's fetch errors end with advice for the developer, not the operator.
  const line = s.replace(/\s+/g, " ").replace(/ For more information, pass `verbose: true`.*$/, "").trim();
  return line.length > MAX_REASON ? `${line.slice(0, MAX_REASON - 1)}…` : line;
}

// Synchronous: events are few (rate-limited) and the last ones before a crash must not be lost in a buffer.
const stderr = pino.destination({ dest: 2, sync: true });

/** The process's event log. */
export const events = new EventLog((line) => stderr.write(line));
