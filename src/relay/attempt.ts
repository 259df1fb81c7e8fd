import type { Route } from "../catalog/catalog.ts";
import type { Provider } from "../upstreams/types.ts";
import type { KeySlot } from "./capacity.ts";
import type { Cutoff } from "./cutoff.ts";
import type { AttemptClock } from "./timeouts.ts";

/**
 * The attempt that answered, as the route loop hands it over (an Attempt, relay/routes.ts). What it holds of the instance (its
 * clock, its place in the cutoff, its key's count in flight) is let go once, whoever gets there
 * first: the route loop at once for a plain answer (confirm read it whole), the stream's billing at
 * the stream's end, the relay when a stream's set-up fails before the stream takes it (text.ts).
 * A second release would count the key one fewer than it is (docs/reliability.md#a-stream-whose-set-up-fails-after-the-upstream-answered).
 */
export class AnsweredAttempt<C = unknown> {
  private released = false;
  /** What the route loop's confirm step read of the answer (AttemptHooks.confirm), once it has. */
  confirmed: C | undefined = undefined;

  constructor(
    readonly route: Route,
    readonly provider: Provider,
    readonly response: Response,
    readonly abort: AbortController,
    readonly attempts: number,
    readonly slot: KeySlot,
    private readonly clock: AttemptClock,
    private readonly cutoff: Cutoff,
  ) {}

  release(): void {
    if (this.released) return;
    this.released = true;
    this.clock.stop();
    this.cutoff.release(this.abort);
    this.slot.inFlight--;
  }
}
