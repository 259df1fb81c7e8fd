/**
 * The upstream calls in flight, to end together when a stop's deadline passes (server.ts drain). A
 * set rather than a listener per call on one shared AbortSignal: the profile showed listener
 * bookkeeping on the hot path; an A/B put the change within noise, and the set says plainly which
 * calls a stop still has to end.
 */
export class Cutoff {
  aborted = false;
  reason: unknown = undefined;
  private readonly live = new Set<AbortController>();

  /** How many upstream calls are held: each is released when its answer has been read or its stream ends. */
  get held(): number {
    return this.live.size;
  }

  /** An upstream call begins; one that begins after the deadline is ended at once. */
  hold(call: AbortController): void {
    if (this.aborted) call.abort(this.reason);
    else this.live.add(call);
  }

  /** The call's body has been read to its end, or it failed. */
  release(call: AbortController): void {
    this.live.delete(call);
  }

  /**
   * Ends the calls in flight with `reason` (a GatewayError, answered as it is) and lets later calls
   * run: the instance fenced itself (store/ledger/postgres-lease.ts), so the holds of these calls are no longer
   * relied upon; a heartbeat that succeeds again lets new requests take new holds.
   */
  cut(reason: unknown): void {
    for (const call of this.live) call.abort(reason);
    this.live.clear();
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    for (const call of this.live) call.abort(reason);
    this.live.clear();
  }
}
