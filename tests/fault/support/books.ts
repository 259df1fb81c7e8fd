import type { Database } from "bun:sqlite";

// The books as SQL sees them: the checks every fault suite makes after its faults.

export interface AccountBooks {
  id: number;
  balance: number;
  ledgerSum: number;
  charges: number;
}

/** Every account's balance, SUM(ledger rows) and number of charge rows. */
export function accountBooks(db: Database): AccountBooks[] {
  return db
    .query(
      `SELECT a.id AS id, a.balance_nano AS balance, coalesce(sum(l.amount_nano), 0) AS ledgerSum,
              coalesce(sum(l.kind = 'charge'), 0) AS charges
       FROM accounts a LEFT JOIN ledger_entries l ON l.account_id = a.id GROUP BY a.id ORDER BY a.id`,
    )
    .all() as AccountBooks[];
}

/** Nano-dollars by which the books disagree: Σ |balance − SUM(ledger)| plus every negative balance. */
export function booksDrift(books: AccountBooks[]): number {
  return books.reduce((n, b) => n + Math.abs(b.balance - b.ledgerSum) + Math.max(0, -b.balance), 0);
}

/** A tiny seeded PRNG (mulberry32): a failing run is replayed with its printed seed. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function pool<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
