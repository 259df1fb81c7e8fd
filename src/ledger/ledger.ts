import type { Statement } from "bun:sqlite";
import type { Db } from "../db/client.ts";
import { GatewayError } from "../errors.ts";
import { formatUsd } from "./money.ts";

export type CreditKind = "registration_credit" | "top_up" | "operator_credit";

export interface Hold {
  id: number;
  requestId: string;
  accountId: number;
  keyId: number;
  amountNano: number;
}

export interface Settlement {
  chargedNano: number;
  /** Cost that could not be charged because the balance would have gone below zero. */
  shortfallNano: number;
}

export interface BalanceView {
  balanceNano: number;
  reservedNano: number;
  spendableNano: number;
}

/**
 * The only writer of money. Every method is one short IMMEDIATE transaction: the write lock is
 * taken at BEGIN, so concurrent reserves serialise instead of racing a read-then-write upgrade.
 */
export class Ledger {
  private readonly s: Record<string, Statement>;

  constructor(private readonly db: Db) {
    const q = (sql: string) => db.$client.prepare(sql);
    this.s = {
      account: q("SELECT balance_nano, reserved_nano FROM accounts WHERE id = ?"),
      key: q("SELECT quota_nano, spent_nano, reserved_nano FROM api_keys WHERE id = ?"),
      insertHold: q("INSERT INTO reservations (request_id, account_id, key_id, amount_nano, owner_pid, created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING id"),
      holdAccount: q("UPDATE accounts SET reserved_nano = reserved_nano + ? WHERE id = ?"),
      holdKey: q("UPDATE api_keys SET reserved_nano = reserved_nano + ? WHERE id = ?"),
      // By id and request id: reservation ids may be reused once a hold is gone.
      deleteHold: q("DELETE FROM reservations WHERE id = ? AND request_id = ? RETURNING account_id, key_id, amount_nano"),
      charge: q("UPDATE accounts SET balance_nano = balance_nano - ?, reserved_nano = reserved_nano - ? WHERE id = ?"),
      chargeKey: q("UPDATE api_keys SET spent_nano = spent_nano + ?, reserved_nano = reserved_nano - ? WHERE id = ?"),
      entry: q("INSERT INTO ledger_entries (account_id, kind, amount_nano, shortfall_nano, key_id, request_id, note, external_ref, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"),
      credit: q("UPDATE accounts SET balance_nano = balance_nano + ? WHERE id = ?"),
      orphans: q("SELECT id, request_id, account_id, key_id, amount_nano, owner_pid FROM reservations"),
    };
  }

  /** Holds an estimate against the account balance and the key's quota, or refuses the request. */
  reserve(requestId: string, accountId: number, keyId: number, amountNano: number): Hold {
    return this.db.$client
      .transaction((): Hold => {
        const acc = this.s.account!.get(accountId) as { balance_nano: number; reserved_nano: number } | null;
        const key = this.s.key!.get(keyId) as { quota_nano: number | null; spent_nano: number; reserved_nano: number } | null;
        if (!acc || !key) throw new GatewayError("no-key", "Invalid API key.");
        if (key.quota_nano !== null && key.spent_nano + key.reserved_nano + amountNano > key.quota_nano) {
          throw new GatewayError(
            "quota",
            `This key's quota of ${formatUsd(key.quota_nano)} USD would be exceeded (spent ${formatUsd(key.spent_nano)} USD, ` +
              `${formatUsd(key.reserved_nano)} USD held by running requests, this request needs up to ${formatUsd(amountNano)} USD). ` +
              "Raise the key's quota or use another key.",
            { headers: { "x-should-retry": "false" } },
          );
        }
        const spendable = acc.balance_nano - acc.reserved_nano;
        if (spendable < amountNano) {
          throw new GatewayError(
            "insufficient_balance",
            `Your credit balance is too low: this request needs up to ${formatUsd(amountNano)} USD and ${formatUsd(Math.max(spendable, 0))} USD is spendable. ` +
              "Top up your balance or lower max_tokens.",
          );
        }
        const row = this.s.insertHold!.get(requestId, accountId, keyId, amountNano, process.pid, Date.now()) as { id: number };
        this.s.holdAccount!.run(amountNano, accountId);
        this.s.holdKey!.run(amountNano, keyId);
        return { id: row.id, requestId, accountId, keyId, amountNano };
      })
      .immediate();
  }

  /** Charges the actual cost (capped at the balance) and releases the hold, exactly once. */
  settle(hold: Hold, costNano: number, requestId: string): Settlement {
    if (!Number.isSafeInteger(costNano) || costNano < 0) throw new RangeError(`bad cost ${costNano}`);
    return this.db.$client
      .transaction((): Settlement => {
        const gone = this.s.deleteHold!.get(hold.id, hold.requestId) as { amount_nano: number } | null;
        // Already released (e.g. by a restart's orphan sweep): charging now would double-count nothing, but the hold is gone.
        const heldNano = gone ? gone.amount_nano : 0;
        const acc = this.s.account!.get(hold.accountId) as { balance_nano: number };
        const chargedNano = Math.min(costNano, Math.max(acc.balance_nano, 0));
        const shortfallNano = costNano - chargedNano;
        this.s.charge!.run(chargedNano, heldNano, hold.accountId);
        this.s.chargeKey!.run(chargedNano, heldNano, hold.keyId);
        if (costNano > 0) {
          this.s.entry!.run(hold.accountId, "charge", -chargedNano, shortfallNano, hold.keyId, requestId, null, null, Date.now());
        }
        return { chargedNano, shortfallNano };
      })
      .immediate();
  }

  /** Failure path: the request is not charged; the hold goes back to spendable. */
  release(hold: Hold): void {
    this.db.$client
      .transaction(() => {
        const gone = this.s.deleteHold!.get(hold.id, hold.requestId) as { amount_nano: number } | null;
        if (!gone) return;
        this.s.holdAccount!.run(-gone.amount_nano, hold.accountId);
        this.s.holdKey!.run(-gone.amount_nano, hold.keyId);
      })
      .immediate();
  }

  /** Adds money with its ledger row. externalRef makes a payment event credit at most once. */
  credit(accountId: number, amountNano: number, kind: CreditKind, note: string | null = null, externalRef: string | null = null): boolean {
    if (!Number.isSafeInteger(amountNano) || amountNano <= 0) throw new RangeError("a credit must be a positive whole number of nano-dollars");
    return this.db.$client
      .transaction(() => {
        try {
          this.s.entry!.run(accountId, kind, amountNano, 0, null, null, note, externalRef, Date.now());
        } catch (e) {
          if (externalRef && /UNIQUE/.test(String(e))) return false;
          throw e;
        }
        this.s.credit!.run(amountNano, accountId);
        return true;
      })
      .immediate();
  }

  balance(accountId: number): BalanceView {
    const acc = this.s.account!.get(accountId) as { balance_nano: number; reserved_nano: number };
    return { balanceNano: acc.balance_nano, reservedNano: acc.reserved_nano, spendableNano: acc.balance_nano - acc.reserved_nano };
  }

  /** Releases holds whose owning process is gone (a crash or kill -9). Returns how many. */
  releaseOrphans(isAlive: (pid: number) => boolean = pidAlive): number {
    const rows = this.s.orphans!.all() as { id: number; request_id: string; account_id: number; key_id: number; amount_nano: number; owner_pid: number }[];
    let released = 0;
    for (const r of rows) {
      if (r.owner_pid !== process.pid && isAlive(r.owner_pid)) continue;
      this.release({ id: r.id, requestId: r.request_id, accountId: r.account_id, keyId: r.key_id, amountNano: r.amount_nano });
      released++;
    }
    return released;
  }

}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}
