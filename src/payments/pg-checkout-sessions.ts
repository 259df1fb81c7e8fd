import type { SQL } from "bun";
import type { PgDb } from "../store/engine/postgres/client.ts";
import type { CheckoutSession, CheckoutStore } from "./checkout-sessions.ts";
import { creditedAlready } from "./topups.ts";

// The checkout sessions on PostgreSQL (`[database] url`), as checkout-sessions.ts keeps them on SQLite.

type Row = Record<string, string | null>;

const session = (r: Row): CheckoutSession => ({
  id: r.id!,
  accountId: Number(r.account_id),
  amountNano: Number(r.amount_nano),
  status: r.status!,
  createdAt: Number(r.created_at),
  creditedAt: r.credited_at === null ? null : Number(r.credited_at),
});

const COLUMNS = "id, account_id::text, amount_nano::text, status::text, created_at::text, credited_at::text";

export class PgCheckouts implements CheckoutStore {
  constructor(private readonly db: PgDb) {}

  async record(id: string, accountId: number, amountNano: number, now = Date.now()): Promise<void> {
    await this.db.$client`INSERT INTO checkout_sessions (id, account_id, amount_nano, status, created_at)
      VALUES (${id}, ${accountId}, ${amountNano}::bigint, 'pending', ${now}::bigint)`;
  }

  async find(id: string): Promise<CheckoutSession | null> {
    const [r] = (await this.db.$client.unsafe(`SELECT ${COLUMNS} FROM checkout_sessions WHERE id = $1`, [id])) as Row[];
    return r ? session(r) : null;
  }

  async of(accountId: number, limit = 100): Promise<CheckoutSession[]> {
    const rows = (await this.db.$client.unsafe(`SELECT ${COLUMNS} FROM checkout_sessions WHERE account_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`, [
      accountId,
      limit,
    ])) as Row[];
    return rows.map(session);
  }

  /**
   * One transaction: the session marked credited, then `credit` (the ledger's, joining the
   * transaction); null when both took, else why not, and nothing is kept. The row's lock makes a
   * second delivery, on this instance or another, wait for this transaction and then find the
   * session credited (or pending again, if this one rolled back).
   */
  async creditOnce(id: string, credit: (tx: SQL) => Promise<string | null>, now = Date.now()): Promise<string | null> {
    try {
      await this.db.$client.begin(async (tx) => {
        const marked = await tx`UPDATE checkout_sessions SET status = 'credited', credited_at = ${now}::bigint WHERE id = ${id} AND status = 'pending' RETURNING id`;
        if (marked.length === 0) throw new NotCredited(creditedAlready);
        const why = await credit(tx);
        if (why !== null) throw new NotCredited(why);
      });
      return null;
    } catch (e) {
      if (e instanceof NotCredited) return e.why;
      throw e;
    }
  }
}

/** Why a top-up's transaction credited nothing: thrown inside it so that it rolls back. */
class NotCredited extends Error {
  constructor(readonly why: string) {
    super(why);
  }
}
