import { describe } from "../core/events.ts";

// Background sends (emails, webhook events): each tried a bounded number of times with growing
// pauses, never on the request that caused it. A send that gives up is the operator's event, not
// the holder's error: the request that caused it has been answered already.

/** The pauses before the 2nd, 3rd, ... attempt: four attempts over about half a minute. */
export const RETRY_DELAYS_MS = [1_000, 5_000, 25_000];

export interface GiveUp {
  attempts: number;
  reason: string;
}

export class Deliveries {
  /** Tests shorten it; the number of attempts is one more than its length. */
  retryDelaysMs: number[] = RETRY_DELAYS_MS;
  private readonly running = new Set<Promise<void>>();

  /** Starts `attempt` now and returns at once; `onGiveUp` hears of the last failure. */
  start(attempt: () => Promise<void>, onGiveUp: (g: GiveUp) => void): void {
    this.track(this.run(attempt, onGiveUp));
  }

  /** Work that leads to sends (reading whom to tell): a drain waits for it too. It must not reject. */
  track(work: Promise<void>): void {
    this.running.add(work);
    void work.finally(() => this.running.delete(work));
  }

  /** Waits for the sends under way, at most `timeoutMs` (a stop does not wait on a mail server for long). */
  async drain(timeoutMs: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const limit = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
    while (this.running.size > 0) {
      const done = await Promise.race([Promise.all([...this.running]).then(() => false), limit.then(() => true)]);
      if (done) break;
    }
    clearTimeout(timer);
  }

  get pending(): number {
    return this.running.size;
  }

  private async run(attempt: () => Promise<void>, onGiveUp: (g: GiveUp) => void): Promise<void> {
    const delays = this.retryDelaysMs;
    for (let i = 0; ; i++) {
      try {
        await attempt();
        return;
      } catch (e) {
        if (i >= delays.length) return onGiveUp({ attempts: i + 1, reason: describe(e) });
        await Bun.sleep(delays[i]!);
      }
    }
  }
}
