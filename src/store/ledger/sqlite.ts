import type { Statement } from "bun:sqlite";
import { eq } from "drizzle-orm";
import { changeWatch, type ChangeWatch } from "../engine/sqlite/change-watch.ts";
import type { Db } from "../engine/sqlite/client.ts";
import { apiKeys } from "../schema/sqlite.ts";
import { GatewayError } from "../../core/errors.ts";
import { events } from "../../core/events.ts";
import { systemClock, type Clock } from "../../core/time.ts";
import { budgetRefused, periodEnd, periodStart, spentInPeriod } from "../../ledger/budget.ts";
import { storedBudget } from "../keys/contract.ts";
import type { GroupCommit } from "../commits/sqlite.ts";
import { boundedCost, Hold, type Alongside, type HoldOwner, type Settlement } from "../../ledger/hold.ts";
import { Holds } from "./holds.ts";
import {
  balanceCeiling,
  balanceRefused,
  budgetSpend,
  checkCreditAmount,
  MAX_BALANCE_NANO,
  quotaRefused,
  type InstanceView,
  type BalanceView,
  type BudgetColumns,
  type CreditKind,
  type KeySpendView,
  type MoneyLedger,
} from "./contract.ts";

/** A key's money columns as the reserve and the post read them. */
interface KeyMoney extends BudgetColumns {
  quotaNano: number | null;
  spentNano: number;
}

const KEY_MONEY = "quota_nano, spent_nano, budget_nano, budget_period, period_start, period_spent_nano, budget_reached_at";

function keyMoney(r: Record<string, unknown>): KeyMoney {
  return {
    quotaNano: r.quota_nano as number | null,
    spentNano: r.spent_nano as number,
    budget: storedBudget(r.budget_nano, r.budget_period),
    periodStart: r.period_start as number,
    periodSpentNano: r.period_spent_nano as number,
    reachedAt: r.budget_reached_at as number | null,
  };
}

/**
 * The only writer of money. Holds of running requests live in memory (holds.ts); the balance, the
 * key's spend and the ledger rows live in the database. A reserve is an in-memory hold checked
 * against the balance and spend this process last read or wrote (re-read after another process
 * commits: store/engine/sqlite/change-watch.ts), atomic because this process is the only one that takes holds and
 * JavaScript runs it in one go; a settle is part of one write transaction (the group commit's
 * batch) and charges the balance as that transaction sees it (the copy, checked after the batch's
 * BEGIN: GroupCommit.exact).
 */
export class Ledger implements HoldOwner, MoneyLedger {
  readonly holds = new Holds();
  private readonly s: Record<string, Statement>;
  private readonly watch: ChangeWatch;
  // The database's values as this connection sees them, kept current by settle and credit.
  private readonly balances = new Map<number, number>();
  private readonly spend = new Map<number, KeyMoney>();
  // A charge's ledger row, refilled by each (see charged).
  private readonly entryValues: (number | string | null)[] = [0, "charge", 0, 0, 0, "", null, null, 0];
  // Built once: bun:sqlite builds a new wrapper (and its properties) on every db.transaction call.
  private readonly tx: { immediate: (fn: () => unknown) => unknown };

  /** `commits`: the serving process's group commit, through which holds post; the CLI has none. */
  constructor(
    private readonly db: Db,
    private readonly commits: GroupCommit | null = null,
    readonly clock: Clock = systemClock(),
  ) {
    const q = (sql: string) => db.$client.prepare(sql);
    this.s = {
      // A scalar subquery, not a join: the join's plan costs about 3x as much here.
      funds: q(`SELECT (SELECT balance_nano FROM accounts WHERE id = ?2) AS balance_nano, ${KEY_MONEY} FROM api_keys WHERE id = ?1`),
      balance: q("SELECT balance_nano FROM accounts WHERE id = ?"),
      keySpend: q(`SELECT ${KEY_MONEY} FROM api_keys WHERE id = ?`),
      charge: q("UPDATE accounts SET balance_nano = balance_nano - ? WHERE id = ?"),
      chargeKey: q("UPDATE api_keys SET spent_nano = spent_nano + ? WHERE id = ?"),
      // A key with a budget: the period's counter with the lifetime spend, restarted when the period has changed.
      chargeBudget: q(`UPDATE api_keys SET spent_nano = spent_nano + ?1,
        period_spent_nano = CASE WHEN period_start = ?3 THEN period_spent_nano + ?1 ELSE ?1 END, period_start = ?3 WHERE id = ?2`),
      // The first budget refusal of a period only: one write per key and period, however many are refused.
      reached: q("UPDATE api_keys SET budget_reached_at = ?2 WHERE id = ?1 AND (budget_reached_at IS NULL OR budget_reached_at < ?3)"),
      entry: q("INSERT INTO ledger_entries (account_id, kind, amount_nano, shortfall_nano, key_id, request_id, note, external_ref, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"),
      credit: q("UPDATE accounts SET balance_nano = balance_nano + ? WHERE id = ?"),
    };
    this.tx = db.$client.transaction((fn: () => unknown) => fn());
    this.watch = changeWatch(db.$client);
    this.watch.onChange(() => {
      this.balances.clear();
      this.spend.clear();
    });
  }

  /**
   * Runs `fn` in a write transaction of its own, or as part of the one already open, whose owner
   * undoes `fn`'s writes alone when it throws: the group commit, the one caller that settles inside a
   * transaction, does (store/commits/sqlite.ts); a savepoint of ours would cost two statements per request.
   */
  private write<T>(fn: () => T): T {
    try {
      return (this.db.$client.inTransaction ? fn() : this.tx.immediate(fn)) as T;
    } catch (e) {
      // Rolled back: the copies may hold what the transaction wrote.
      this.watch.forget();
      throw e;
    }
  }

  /** Holds an estimate against the account balance and the key's quota, or refuses the request. */
  reserve(requestId: string, accountId: number, keyId: number, amountNano: number): Hold {
    // The copies, read together on a miss (read in place: a pair object for them cost every request one).
    this.watch.sync();
    let balance = this.balances.get(accountId);
    let k = this.spend.get(keyId);
    if (balance === undefined || k === undefined) {
      const r = this.s.funds!.get(keyId, accountId) as (Record<string, unknown> & { balance_nano: number | null }) | null;
      if (!r || r.balance_nano === null) throw new GatewayError("no-key", "Invalid API key.");
      this.balances.set(accountId, (balance = r.balance_nano));
      this.spend.set(keyId, (k = keyMoney(r)));
    }
    const keyHeld = this.holds.key(keyId);
    if (k.quotaNano !== null && k.spentNano + keyHeld + amountNano > k.quotaNano) throw quotaRefused(k.quotaNano, k.spentNano, keyHeld, amountNano);
    if (k.budget) {
      const now = this.clock.now();
      const spent = spentInPeriod(k.budget.period, k.periodStart, k.periodSpentNano, now);
      if (spent + keyHeld + amountNano > k.budget.nano) {
        this.markReached(accountId, keyId, k, now);
        throw budgetRefused(k.budget, spent, keyHeld, amountNano, now);
      }
    }
    const spendable = balance - this.holds.account(accountId);
    if (spendable < amountNano) throw balanceRefused(amountNano, spendable);
    const hold = new Hold(this, requestId, accountId, keyId, amountNano);
    this.holds.add(hold);
    return hold;
  }

  /** The "budget reached" notice: written, and told (events.budgetReached), on the period's first refusal only. */
  private markReached(accountId: number, keyId: number, k: KeyMoney, now: number): void {
    const start = periodStart(k.budget!.period, now);
    if (k.reachedAt !== null && k.reachedAt >= start) return;
    k.reachedAt = now;
    try {
      const first = this.write(() => this.s.reached!.run(keyId, now, start).changes === 1);
      if (first) events.budgetReached({ accountId, keyId, budgetNano: k.budget!.nano, period: k.budget!.period, resetsAt: periodEnd(k.budget!.period, now) });
    } catch (e) {
      // The refusal stands without its notice.
      events.writeFailed("ledger", `budget of key ${keyId}`, e);
    }
  }

  /** HoldOwner: the charge and `alongside` in one group-committed transaction (see Hold.post). */
  post(hold: Hold, costNano: number, alongside: Alongside | undefined): Promise<Settlement> {
    if (!this.commits) return Promise.reject(new Error("holds post through the serving process's group commit"));
    return this.commits.run(
      () => {
        const s = this.charge(hold, costNano);
        // The group commit's transaction is on this connection: the row's owner writes through its own statements.
        alongside?.(null);
        return s;
      },
      // Once the write is committed, and also when it failed: the request is over either way (it
      // failed, so it is free), and a hold kept would only shrink the spendable balance until the next start.
      () => this.holds.remove(hold),
    );
  }

  /** HoldOwner: nothing is written; the held amount is spendable again. */
  void(hold: Hold): void {
    this.holds.remove(hold);
  }

  /**
   * The charge of one request, inside the caller's transaction: capped so that the balance never goes
   * below zero and the key never spends past its quota (concurrent requests whose estimates were too
   * low can together reach past both); what could not be charged is recorded as shortfall.
   */
  charge(hold: Hold, costNano: number): Settlement {
    const cost = boundedCost(costNano);
    // Nothing to charge: no ledger row.
    if (cost === 0) return { chargedNano: 0, shortfallNano: 0 };
    if (!this.db.$client.inTransaction) return this.write(() => this.charged(hold, cost, undefined));
    // In the group commit's batch the copy is the row's value (GroupCommit.exact): no statement to read it.
    const copy = this.commits?.exact ? this.balances.get(hold.accountId) : undefined;
    // Inside the caller's transaction, as `write` would run it, without its closure.
    try {
      return this.charged(hold, cost, copy);
    } catch (e) {
      this.watch.forget();
      throw e;
    }
  }

  /** charge's statements, in the transaction open; `copy`: the balance as this connection knows it exactly, if it does. */
  private charged(hold: Hold, cost: number, copy: number | undefined): Settlement {
    const balanceNano = copy ?? (this.s.balance!.get(hold.accountId) as { balance_nano: number }).balance_nano;
    // Most keys have neither quota nor budget (known from the copy the reserve read): no statement for them.
    const known = this.spend.get(hold.keyId);
    const row = known && known.quotaNano === null && known.budget === null ? null : (this.s.keySpend!.get(hold.keyId) as Record<string, unknown> | null);
    const key = row ? keyMoney(row) : null;
    const quotaLeft = key?.quotaNano == null ? Infinity : Math.max(key.quotaNano - key.spentNano, 0);
    const budget = key?.budget ?? null;
    // The clock is asked only by a key with a budget (its period): most keys have none.
    const now = budget ? this.clock.now() : 0;
    const start = budget ? periodStart(budget.period, now) : 0;
    const budgetLeft = budget ? Math.max(budget.nano - spentInPeriod(budget.period, key!.periodStart, key!.periodSpentNano, now), 0) : Infinity;
    const chargedNano = Math.min(cost, Math.max(balanceNano, 0), quotaLeft, budgetLeft);
    const shortfallNano = cost - chargedNano;
    this.s.charge!.run(chargedNano, hold.accountId);
    if (budget) this.s.chargeBudget!.run(chargedNano, hold.keyId, start);
    else this.s.chargeKey!.run(chargedNano, hold.keyId);
    // The values as one array, bound as the positional parameters (no spread's copy), and the same
    // array each time: bun:sqlite binds it before `run` returns and keeps nothing of it.
    const v = this.entryValues;
    v[0] = hold.accountId;
    v[2] = -chargedNano;
    v[3] = shortfallNano;
    v[4] = hold.keyId;
    v[5] = hold.requestId;
    v[8] = Date.now();
    this.s.entry!.run(v as never);
    this.balances.set(hold.accountId, balanceNano - chargedNano);
    const spend = this.spend.get(hold.keyId);
    if (spend) {
      spend.spentNano += chargedNano;
      if (budget) {
        spend.periodSpentNano = (spend.periodStart === start ? spend.periodSpentNano : 0) + chargedNano;
        spend.periodStart = start;
      }
    }
    return { chargedNano, shortfallNano };
  }

  /** Adds money with its ledger row. externalRef makes a payment event credit at most once. */
  credit(accountId: number, amountNano: number, kind: CreditKind, note: string | null = null, externalRef: string | null = null): boolean {
    checkCreditAmount(amountNano);
    return this.write(() => {
      const balance = (this.s.balance!.get(accountId) as { balance_nano: number } | null)?.balance_nano ?? 0;
      if (amountNano > MAX_BALANCE_NANO - balance) throw balanceCeiling(amountNano, balance);
      try {
        this.s.entry!.run(accountId, kind, amountNano, 0, null, null, note, externalRef, Date.now());
      } catch (e) {
        if (externalRef && /UNIQUE/.test(String(e))) return false;
        throw e;
      }
      this.s.credit!.run(amountNano, accountId);
      this.balances.delete(accountId);
      return true;
    });
  }

  balance(accountId: number): BalanceView {
    const balanceNano = (this.s.balance!.get(accountId) as { balance_nano: number }).balance_nano;
    const reservedNano = this.holds.account(accountId);
    return { balanceNano, reservedNano, spendableNano: balanceNano - reservedNano };
  }

  /** Nothing beyond the group commit's probe: holds live in this process, which is the database's only server. */
  writeRefusal(): null {
    return null;
  }

  readonly instanceId = null;

  instances(): InstanceView[] {
    return [];
  }

  /** One server per file: `gateway reload` asks it directly, so there is no fleet to tell. */
  recordReload(): void {}

  /** What the key has spent and holds (GET /v1/me); null when no key has this id. */
  keySpend(keyId: number): KeySpendView | null {
    const row = this.db
      .select({
        spentNano: apiKeys.spentNano,
        budgetNano: apiKeys.budgetNano,
        budgetPeriod: apiKeys.budgetPeriod,
        periodStart: apiKeys.periodStart,
        periodSpentNano: apiKeys.periodSpentNano,
        reachedAt: apiKeys.budgetReachedAt,
      })
      .from(apiKeys)
      .where(eq(apiKeys.id, keyId))
      .get();
    if (!row) return null;
    const budget = budgetSpend({ ...row, budget: storedBudget(row.budgetNano, row.budgetPeriod) }, this.clock.now());
    return { spentNano: row.spentNano, reservedNano: this.holds.key(keyId), budget };
  }
}

