import { estimatedUsage } from "../dialects/stream-usage.ts";
import type { Calibration } from "../ledger/calibration.ts";
import type { Model } from "../catalog/catalog.ts";
import type { RelayCall } from "./context.ts";
import type { Hold } from "../ledger/hold.ts";
import type { TokenUsage } from "../core/money.ts";
import { priceUsage } from "../catalog/prices.ts";
import { writeBatched } from "../store/request-log/contract.ts";
import type { StreamMachine } from "../dialects/stream-machine.ts";
import type { Attempt } from "./routes.ts";
import { post } from "./charge.ts";
import { events } from "../core/events.ts";
import { GatewayError } from "../core/errors.ts";

/** How long a stream whose client left after the upstream's finish waits for the upstream's usage. */
export const USAGE_GRACE_MS = 2_000;

/** How a relayed stream ended, for its hold: charged, free, or charged for what was delivered. */
export type Ending = "completed" | "upstream_failed" | "cancelled";

/** What a stream's bill is made of: the request, the route that answers, the pair's machine, the request's hold. */
export interface BilledStream {
  call: RelayCall;
  attempt: Attempt;
  machine: StreamMachine;
  hold: Hold;
  model: Model;
  estimatedInputTokens: number;
  /** The request's output cap: what a cancelled stream's output estimate never exceeds. */
  maxOut: number;
  /** The request's pricing, when it adds to the route's table (relay/text.ts's implied search); absent: the route's table. */
  costOf?: (u: TokenUsage) => number;
}

/**
 * A stream's money: the stream owns the request's hold from its first byte and resolves it exactly
 * once (`settle`, reached from every ending):
 * - the final usage event (the one carrying cost_usd) waits for its charge to commit (`chargeAnswer`),
 *   so a crash never loses the charge of an answer the client saw complete, and the charge is the cost shown;
 * - the upstream failed, or the instance's fence cut the call: nothing is charged;
 * - the client cancelled: input plus the output delivered so far (billing rules, docs/database.md),
 *   unless the answer was complete and its count is on its way (`usageGraceOnCancel`).
 */
export class StreamBilling {
  /** settle has run: the hold is resolved and the stream is over. */
  settled = false;

  constructor(private readonly s: BilledStream) {}

  /** The instance's fence ended the call (Cutoff.cut): the holds are no longer relied upon, so the stream ends free. */
  fence(): GatewayError | null {
    const reason = this.s.attempt.abort.signal.reason;
    return reason instanceof GatewayError ? reason : null;
  }

  /** The machine has priced the answer and the hold is still open: the final usage event waits for chargeAnswer. */
  get chargeDue(): boolean {
    return this.s.hold.open && this.s.machine.priced;
  }

  /** The one place the hold resolves (if the final usage event has not posted it already). */
  async settle(ending: Ending): Promise<void> {
    if (this.settled) return;
    this.settled = true;
    const { call, attempt, machine, hold } = this.s;
    // attemptRoutes left the call held by the cutoff and its key in flight; the stream lets them go when it ends.
    attempt.release();
    const cutoff = call.svc.cutoff;
    if (!hold.open) return;
    if (ending === "upstream_failed") {
      hold.void("upstream_failed");
      // The client had the stream's 200 and then an error event: the row keeps what it got.
      call.log.status = 200;
      call.log.errorCode = cutoff.aborted ? "shutdown" : (this.fence()?.code ?? "upstream_unavailable");
      call.log.costNano = 0;
      return this.writeLogAlone();
    }
    if (ending === "cancelled") call.log.errorCode = "client_cancelled";
    // A client gone after the upstream's finish had the whole answer: once the upstream's own count
    // of it has come (UsageGrace), that is what it costs, not the estimate of the delivered text.
    const estimated = ending === "cancelled" && !(machine.outcome === "completed" && machine.outputCounted);
    const billed = estimated ? deliveredUsage(machine, this.s.estimatedInputTokens, call.svc.calibration, this.s.model.id, this.s.maxOut) : this.answerUsage();
    try {
      await post(call, hold, this.costOf(billed), billed, 200, machine.inputCounted, estimated ? null : this.countedOutput());
    } catch (e) {
      // Not charged (the write rolled back and the hold went): the answer has gone out free. One
      // event line, not a rethrow (Bun prints a stack per failed stream); the row alone records it.
      events.writeFailed("ledger", call.requestId, e);
      await this.writeLogAlone();
    }
  }

  /**
   * Posts the answer's cost before its final usage event leaves; false when it could not be
   * committed: the request is then recorded free, and the caller tells the client (an error event
   * instead of the usage) before writeLogAlone.
   */
  async chargeAnswer(): Promise<boolean> {
    const { call, hold, machine } = this.s;
    const billed = this.answerUsage();
    try {
      await post(call, hold, this.costOf(billed), billed, 200, machine.inputCounted, this.countedOutput());
      return true;
    } catch (e) {
      events.writeFailed("ledger", call.requestId, e);
      call.log.errorCode = "database_unavailable";
      call.log.costNano = 0;
      return false;
    }
  }

  /** The request's log row without a charge (a free ending). */
  writeLogAlone(): Promise<void> {
    const { call } = this.s;
    call.log.latencyMs = performance.now() - call.started;
    return writeBatched(call.svc.commits, call.svc.logs, call.log);
  }

  /**
   * The client left: when it had the upstream's finish but not yet its usage (a Chat upstream sends
   * the usage in a chunk of its own after finish_reason), a grace in which the answer may still be
   * billed the upstream's count rather than the estimate of its text; null when nothing is to wait for.
   */
  usageGraceOnCancel(letGoUpstream: () => void): UsageGrace | null {
    const m = this.s.machine;
    if (this.settled || !this.s.hold.open || m.outcome !== "completed" || m.outputCounted || m.upstreamEnded) return null;
    return new UsageGrace(this, letGoUpstream);
  }

  private costOf(u: TokenUsage): number {
    return this.s.costOf ? this.s.costOf(u) : priceUsage(this.s.attempt.route.prices, u);
  }

  /** What a finished answer is billed: the machine's usage, else our estimate (the one its final usage showed). */
  private answerUsage(): TokenUsage {
    const m = this.s.machine;
    return m.usage ?? estimatedUsage(this.s.estimatedInputTokens, textOf(m));
  }

  /** The delivered text, when the usage's output is the upstream's count of it (an output sample of the model's calibration). */
  private countedOutput() {
    const m = this.s.machine;
    return m.outputCounted ? textOf(m) : null;
  }
}

/**
 * A client gone after the upstream's finish but before its usage: the pump keeps reading, now
 * without writing, for up to USAGE_GRACE_MS. Past the grace, or at the upstream's end (`end`), the
 * stream settles as cancelled (billed as counted, or as delivered); the upstream is let go either way.
 */
export class UsageGrace {
  /** Resolves once the grace has ended: the stream's cancel waits for it. */
  readonly done: Promise<void>;
  private readonly resolve: () => void;
  private readonly timer: ReturnType<typeof setTimeout>;

  constructor(
    private readonly billing: StreamBilling,
    private readonly letGoUpstream: () => void,
  ) {
    const { promise, resolve } = Promise.withResolvers<void>();
    this.done = promise;
    this.resolve = resolve;
    this.timer = setTimeout(() => void this.end(), USAGE_GRACE_MS);
  }

  async end(): Promise<void> {
    clearTimeout(this.timer);
    if (!this.billing.settled) await this.billing.settle("cancelled");
    this.letGoUpstream();
    this.resolve();
  }
}

const textOf = (m: Pick<StreamMachine, "outputBytes" | "outputChars">) => ({ bytes: m.outputBytes, chars: m.outputChars });

/**
 * What a cancelled stream is billed: input (the upstream's count, else our estimate) plus the output
 * delivered so far. The provider bills the operator for every token it generated, so the delivered
 * text is counted conservatively: on the model's output calibration (its answers' lowest bytes per
 * token), else the plain estimate (which counts CJK a token a character), never above the request's
 * output cap (no answer is longer). An upstream's running output count (message_start's
 * `output_tokens: 1`) is a floor, not the answer: the text delivered after it counts too.
 */
export function deliveredUsage(
  machine: Pick<StreamMachine, "usage" | "outputChars" | "outputBytes">,
  estimatedInputTokens: number,
  calibration: Pick<Calibration, "outputTokens">,
  model: string,
  maxOut: number,
): TokenUsage {
  const u = machine.usage;
  const delivered = Math.min(calibration.outputTokens(model, machine.outputBytes, machine.outputChars), maxOut);
  return {
    input: u ? u.input : estimatedInputTokens,
    output: Math.max(u?.output ?? 0, delivered),
    cacheRead: u?.cacheRead ?? 0,
    cacheWrite: u?.cacheWrite ?? 0,
  };
}
