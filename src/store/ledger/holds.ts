/** A running request's hold on its account's balance and its key's quota. */
export interface Hold {
  requestId: string;
  accountId: number;
  keyId: number;
  amountNano: number;
}

/**
 * The open holds, kept by the serving process in memory. A hold lives exactly as long as its
 * request, which lives no longer than the process (a reservation outlives nothing), so a hold
 * never needs to be durable: a crash takes the holds with it and the next start has nothing to
 * release. Keeping them out of the database saves a write transaction per request (bench/RESULTS.md).
 * The price is that only this process sees them: one `gateway serve` per database (src/store/engine/sqlite/serve-lock.ts).
 */
export class Holds {
  private readonly open = new Set<Hold>();
  private readonly byAccount = new Map<number, number>();
  private readonly byKey = new Map<number, number>();
  private totalNano = 0;

  add(h: Hold): void {
    this.open.add(h);
    this.totalNano += h.amountNano;
    bump(this.byAccount, h.accountId, h.amountNano);
    bump(this.byKey, h.keyId, h.amountNano);
    // Every account entry came with one of its keys': the key map is the larger of the two.
    if (this.byKey.size > this.open.size + SETTLED_KEPT) this.sweep();
  }

  /** Removes the hold; false when it was already gone (each hold is let go exactly once). */
  remove(h: Hold): boolean {
    if (!this.open.delete(h)) return false;
    this.totalNano -= h.amountNano;
    bump(this.byAccount, h.accountId, -h.amountNano);
    bump(this.byKey, h.keyId, -h.amountNano);
    return true;
  }

  account(accountId: number): number {
    return this.byAccount.get(accountId) ?? 0;
  }

  key(keyId: number): number {
    return this.byKey.get(keyId) ?? 0;
  }

  /** Nano-dollars held by all running requests. */
  get total(): number {
    return this.totalNano;
  }

  get count(): number {
    return this.open.size;
  }

  /** The open holds, oldest first (for an account's page and the checks after a run). */
  list(): Hold[] {
    return [...this.open];
  }

  /** Drops the settled entries: the maps then hold only accounts and keys with running requests. */
  private sweep(): void {
    for (const m of [this.byAccount, this.byKey]) for (const [id, v] of m) if (v === 0) m.delete(id);
  }
}

/**
 * How many settled (zero) entries the maps keep beyond the running holds before a sweep. An account's
 * entry is kept from one request to its next: deleted when it settled and added again, it cost a
 * request 70 to 100 ns more whenever the account had nothing else running (bench/RESULTS.md).
 */
const SETTLED_KEPT = 1024;

function bump(m: Map<number, number>, id: number, by: number): void {
  m.set(id, (m.get(id) ?? 0) + by);
}
