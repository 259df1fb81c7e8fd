import type { SQL } from "bun";

/**
 * On PostgreSQL, one write (an INSERT with its own `$1…$n`) that runs as one more part of another
 * owner's statement, so that both commit together in one round trip without a transaction: the
 * request's log row riding on the charge (store/ledger/postgres.ts). `settled` is told how the statement
 * went (its error, or null).
 */
export interface Rider {
  text: string;
  params: unknown[];
  /**
   * The same write for several riders of this text at once (their `params`, in order), as one part
   * of a batch of posts: one text whatever their count, so that PostgreSQL parses and plans it once.
   */
  many?: { text: string; params(rows: unknown[][]): unknown[] };
  settled(error: unknown): void;
}

/**
 * What a post runs in its transaction beside the charge (the request's log row): on SQLite the group
 * commit's transaction is open on the one connection, so it gets null and writes as usual; on
 * PostgreSQL it gets the transaction to write through, and may resolve to a function to call once
 * that transaction has committed (the row's telling, store/request-log/contract.ts). With a `rider`,
 * PostgreSQL needs no transaction at all: the write joins the charge's own statement.
 */
export type Alongside = ((tx: SQL | null) => unknown) & { rider?: () => Rider };


/** What posting a hold charged. */
export interface Settlement {
  chargedNano: number;
  /** Cost that could not be charged because the balance would have gone below zero. */
  shortfallNano: number;
}

/** A second resolution of one hold: a bug in the money path, never a client's doing. */
export class HoldResolvedTwice extends Error {}

/** What resolves a hold: the ledger, which owns the balance it holds. */
export interface HoldOwner {
  post(hold: Hold, costNano: number, alongside: Alongside | undefined): Promise<Settlement>;
  void(hold: Hold): void;
}

/**
 * A running request's hold on its account's balance and its key's quota (a pending transfer, in
 * TigerBeetle's words). It resolves exactly once: `post` charges what the request cost, `void` lets it
 * go uncharged. Every request holds it in one `try/finally` whose `finally` calls `close()`, so no path
 * (an exception, a client gone, a failed commit) can leave it open; a second resolution throws.
 */
export class Hold {
  private state: "open" | "posted" | "voided" = "open";
  /** Why it was voided, for the request log. */
  voidReason: string | null = null;

  constructor(
    private readonly owner: HoldOwner,
    readonly requestId: string,
    readonly accountId: number,
    readonly keyId: number,
    readonly amountNano: number,
  ) {}

  get open(): boolean {
    return this.state === "open";
  }

  get posted(): boolean {
    return this.state === "posted";
  }

  /**
   * Charges `costNano` (capped so the balance and the key's quota are never overrun; the rest is
   * recorded as shortfall) and runs `alongside` (the request's log row) in the same write
   * transaction; resolves once both are durable. If the write fails the hold is let go uncharged and
   * the error is thrown: the request then failed, and a failed request is free.
   */
  post(costNano: number, alongside?: Alongside): Promise<Settlement> {
    this.resolve("posted");
    return this.owner.post(this, costNano, alongside);
  }

  /** Lets the hold go uncharged: the request failed or was refused. */
  void(reason: string): void {
    this.resolve("voided");
    this.voidReason = reason;
    this.owner.void(this);
  }

  /** The request's `finally`: voids the hold if nothing resolved it, else does nothing. */
  close(reason = "abandoned"): void {
    if (this.state === "open") this.void(reason);
  }

  [Symbol.dispose](): void {
    this.close();
  }

  private resolve(to: "posted" | "voided"): void {
    if (this.state !== "open") throw new HoldResolvedTwice(`hold of ${this.requestId} is already ${this.state}; it cannot be ${to}`);
    this.state = to;
  }
}

/** The most a single request can be charged: nano-dollars stay exact JavaScript numbers (about 9M USD). */
export const MAX_COST_NANO = Number.MAX_SAFE_INTEGER;

/**
 * A cost as the ledger can hold it: a whole, non-negative number of nano-dollars no larger than
 * MAX_COST_NANO. Usage counts are validated before pricing, but a price times an absurd count (an
 * upstream reporting 10^12 tokens) can pass 2^53; it is capped, and the balance cap then charges
 * what the balance allows, the rest recorded as shortfall.
 */
export function boundedCost(costNano: number): number {
  // NaN or a negative cost is a bug upstream of the ledger (counts are validated before pricing).
  if (Number.isNaN(costNano) || costNano < 0) throw new RangeError(`bad cost ${costNano}`);
  return costNano >= MAX_COST_NANO ? MAX_COST_NANO : Math.ceil(costNano);
}
