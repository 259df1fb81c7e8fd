import type { SQL } from "bun";
import { databaseUnavailable, type GatewayError } from "../../core/errors.ts";
import { events } from "../../core/events.ts";
import { systemClock, type Clock } from "../../core/time.ts";
import { periodStarts } from "../../ledger/budget.ts";
import { storedBudget } from "../keys/contract.ts";
import { boundedCost, Hold, type Alongside, type HoldOwner, type Rider, type Settlement } from "../../ledger/hold.ts";
import { Holds } from "./holds.ts";
import { POST, postText, settled } from "./postgres-post.ts";
import { takeHold } from "./postgres-reserve.ts";
import { Lane, postAll, releaseMany, reserveMany, TurnBatch, type ReserveItem } from "./postgres-batch.ts";
import { InstanceLease, listInstances, type LeaseOptions } from "./postgres-lease.ts";
import { balanceCeiling, budgetSpend, checkCreditAmount, MAX_BALANCE_NANO, type BalanceView, type CreditKind, type InstanceView, type KeySpendView, type MoneyLedger, type ReloadRecord } from "./contract.ts";

/** A post waiting for its turn's statement. */
interface PostWait {
  hold: Hold;
  id: number;
  cost: number;
  rider: Rider | undefined;
}

// The ledger on PostgreSQL (`[database] url`), shared by several gateway instances: every instance
// spends the same balances, so a hold cannot live in one process's memory as on SQLite. Holds are
// rows carrying their instance's id, summed into accounts.held_nano and api_keys.held_nano in the
// transaction that takes them; a reserve is a conditional UPDATE of those sums, so two instances
// can never both take the last dollar (docs/database.md, "The money path on PostgreSQL").
//
// Lock order, everywhere: the account's row, then the key's. Two transactions on one account then
// queue on the account row and can never wait for each other in a cycle.
//
// A hold is relied upon only under this instance's lease (postgres-lease.ts): once the heartbeat has
// failed for nearly the timeout, reserves and posts are refused 503 database_unavailable, and the
// holds taken before are never posted, since another instance may release them from then on.

export type PgLedgerOptions = LeaseOptions;

/** The hold insert's foreign key to this instance's row: the row was deleted by another instance's release. */
const OWN_ROW_KEY = "holds_instance_id_instances_id_fk";

export class PgLedger implements MoneyLedger, HoldOwner {
  /** This instance's open holds (its requests in flight), as on SQLite. */
  readonly holds = new Holds();
  /** Each open hold's row, and the lease's epoch it was taken under. */
  private readonly rows = new Map<Hold, { id: number; epoch: number }>();
  /** Releases under way (voids answer at once; their statement runs behind). */
  private readonly releasing = new Set<Promise<void>>();
  /** Hold rows whose release failed: retried on every heartbeat, since no other instance would. */
  private readonly unreleased = new Set<number>();
  /** Null for the operator's ledger, which takes no holds. */
  private readonly lease: InstanceLease | null;
  readonly clock: Clock = systemClock();
  /** The reserves', posts' and voids' statements, one under way at a time (they all lock the account's row). */
  private readonly lane = new Lane();
  /** This turn's reserves, taken in one statement (each a hold row's id). */
  private readonly reserves = new TurnBatch<ReserveItem, number>((items) => this.reserveTurn(items), this.lane);
  /** This turn's releases (voids), in one statement. */
  private readonly releases = new TurnBatch<number, void>((ids) => this.releaseTurn(ids), this.lane);
  /** This turn's posts (each with its log row as a rider, or none), in one statement when every charge is whole. */
  private readonly posts = new TurnBatch<PostWait, Settlement>((items) => this.postTurn(items), this.lane);

  private constructor(
    private readonly sql: SQL,
    private readonly opts: PgLedgerOptions,
  ) {
    this.lease = opts.instanceId ? new InstanceLease(sql, opts, () => this.retryReleases()) : null;
  }

  /**
   * Registers this instance and starts its heartbeat. Holds left under this instance's id by an
   * earlier run (a crash, then a restart with the same `[cluster] instance_id`) are released first:
   * this process has taken none yet, so none of them is live.
   */
  static async start(sql: SQL, opts: PgLedgerOptions): Promise<PgLedger> {
    const ledger = new PgLedger(sql, opts);
    await ledger.lease!.start();
    return ledger;
  }

  /**
   * The operator's ledger (the CLI): credits and reads, never a hold, so no instance row and no
   * heartbeat. A reserve through it is refused: a hold of a process that beats nowhere would be
   * released by the instances as a silent one's.
   */
  static forOperator(sql: SQL): PgLedger {
    return new PgLedger(sql, { instanceId: "", holdTimeoutMs: 0 });
  }

  get instanceId(): string {
    return this.opts.instanceId;
  }

  instances(): Promise<InstanceView[]> {
    return listInstances(this.sql);
  }

  async recordReload(reload: ReloadRecord): Promise<void> {
    await this.lease?.recordReload(reload);
  }

  /** `fn` runs when this instance fences itself (server: the upstream calls in flight are ended with `why`). */
  onFence(fn: (why: GatewayError) => void): void {
    this.lease?.onFence(fn);
  }

  /** Why a paid request could not be taken now (GET /readyz): this instance fenced, or its last heartbeat refused. */
  writeRefusal(): GatewayError | null {
    return this.lease?.writeRefusal() ?? null;
  }

  /** Stops the heartbeat and waits for the releases under way. Holds still open stay until posted, voided or released by another instance. */
  async stop(): Promise<void> {
    this.lease?.stop();
    await this.lease?.idle();
    await this.settled();
  }

  /** After stop, at a clean exit: this instance's row (and any hold left under it) leaves `instances`, which then lists the running ones. */
  async retire(): Promise<void> {
    await this.lease?.retire();
  }

  /** Resolves when every void so far has reached the database (or failed and awaits its retry). */
  async settled(): Promise<void> {
    while (this.releasing.size > 0) await Promise.all(this.releasing);
  }

  async reserve(requestId: string, accountId: number, keyId: number, amountNano: number): Promise<Hold> {
    const lease = this.lease;
    if (!lease) throw new Error("the operator's ledger takes no holds: start an instance (PgLedger.start)");
    for (let attempt = 1; ; attempt++) {
      if (!lease.valid()) throw databaseUnavailable(new Error(`instance ${this.opts.instanceId} is fenced`));
      const epoch = lease.epoch;
      let id: number;
      try {
        id = await this.reserves.add({ accountId, keyId, amountNano });
      } catch (e) {
        if (!isOwnRowGone(e)) throw e;
        // Another instance took this one for silent and released its holds: none is relied upon
        // any more; the row is written again (a beat) and the reserve tried once more.
        lease.fence("another instance released its holds");
        if (attempt === 2 || !(await lease.renew())) throw databaseUnavailable(e);
        continue;
      }
      // A fence fell while the statement ran: the hold is let go at once, never relied upon.
      if (epoch !== lease.epoch || !lease.valid()) {
        this.track(this.release(id));
        throw databaseUnavailable(new Error(`instance ${this.opts.instanceId} fenced while reserving`));
      }
      const hold = new Hold(this, requestId, accountId, keyId, amountNano);
      this.holds.add(hold);
      this.rows.set(hold, { id, epoch });
      return hold;
    }
  }

  /**
   * One turn's reserves: the ids of the holds the batch statement granted. A lone reserve, an item
   * the batch did not grant, and every item of a batch the database refused are decided alone by
   * `takeHold` (postgres-reserve.ts), so that each gets the verdict and the error of its own statement, never a neighbour's.
   */
  private async reserveTurn(items: ReserveItem[]): Promise<(number | Promise<number>)[]> {
    let ids: (number | null)[] = items.map(() => null);
    if (items.length > 1) {
      try {
        ids = await reserveMany(this.sql, items, this.opts.instanceId, periodStarts(this.clock.now()));
      } catch {
        // Each alone below, with its own statement's error.
      }
    }
    return items.map((x, i) => ids[i] ?? takeHold(this.sql, this.opts.instanceId, x, this.clock.now()));
  }

  /** One turn's releases in one statement; if it fails, each alone (which records its own failure for the retry). */
  private async releaseTurn(ids: number[]): Promise<void[]> {
    if (ids.length > 1) {
      try {
        await releaseMany(this.sql, ids);
        for (const id of ids) this.unreleased.delete(id);
        return [];
      } catch {
        // Each alone below: a failure is then its own, recorded for the heartbeat's retry.
      }
    }
    await Promise.all(ids.map((id) => this.release(id)));
    return [];
  }

  /**
   * HoldOwner: the POST statement, with `alongside` (the request's log row) riding on it as one more
   * part when it offers a rider, else beside it in one transaction. A hold taken before a fence of
   * this instance is not posted (another instance may have released it): the request is refused 503
   * database_unavailable, free, and the hold let go.
   */
  async post(hold: Hold, costNano: number, alongside: Alongside | undefined): Promise<Settlement> {
    const { id, epoch } = this.rows.get(hold)!;
    try {
      if (epoch !== this.lease!.epoch || !this.lease!.valid()) throw databaseUnavailable(new Error(`instance ${this.opts.instanceId} fenced`));
      const cost = boundedCost(costNano);
      const rider = alongside?.rider?.();
      let settlement: Settlement;
      if (rider || !alongside) {
        settlement = await this.posts.add({ hold, id, cost, rider });
      } else {
        const params = [id, hold.accountId, hold.keyId, cost, hold.requestId, Date.now(), ...periodStarts(this.clock.now())];
        let committed: unknown;
        settlement = await this.sql.begin(async (tx) => {
          // The other write first: it locks nothing, so the account's row is held only from the
          // money statement to the COMMIT that follows it.
          committed = await alongside(tx);
          return settled(cost, await tx.unsafe(POST, params));
        });
        if (typeof committed === "function") committed();
      }
      this.forget(hold);
      return settlement;
    } catch (e) {
      // The request failed, so it is free: its hold is let go as a void would.
      this.void(hold);
      throw e;
    }
  }

  /**
   * One turn's posts: one statement charging each its whole cost, with the log rows, when no charge
   * meets a cap; else (a cap met, or any failure) each alone by `postOne`, which caps and records the
   * shortfall, and fails, if it does, with its own statement's error.
   */
  private async postTurn(items: PostWait[]): Promise<(Settlement | Promise<Settlement>)[]> {
    // The log rows become one write of several rows: only when every rider is the same write (there is one: the log row's).
    const first = items.find((w) => w.rider)?.rider;
    const sameRows = items.every((w) => !w.rider || (w.rider.many && w.rider.text === first!.text));
    if (items.length > 1 && sameRows) {
      try {
        await postAll(
          this.sql,
          items.map((w) => ({ holdId: w.id, accountId: w.hold.accountId, keyId: w.hold.keyId, costNano: w.cost, requestId: w.hold.requestId, rowParams: w.rider?.params ?? null })),
          periodStarts(this.clock.now()),
          first?.many ?? null,
        );
        for (const w of items) w.rider?.settled(null);
        return items.map((w) => ({ chargedNano: w.cost, shortfallNano: 0 }));
      } catch {
        // Each alone below, as before batching.
      }
    }
    return items.map((w) => this.postOne(w));
  }

  /** The post's statement for one hold, its log row riding on it: one round trip, no transaction. */
  private async postOne({ hold, id, cost, rider }: PostWait): Promise<Settlement> {
    const params = [id, hold.accountId, hold.keyId, cost, hold.requestId, Date.now(), ...periodStarts(this.clock.now())];
    const text = postText(rider?.text);
    try {
      const s = settled(cost, await this.sql.unsafe(text, rider ? [...params, ...rider.params] : params));
      rider?.settled(null);
      return s;
    } catch (e) {
      rider?.settled(e);
      throw e;
    }
  }

  /** HoldOwner: answers at once; the release runs behind, and is retried on each heartbeat if it fails. */
  void(hold: Hold): void {
    const id = this.forget(hold);
    if (id !== undefined) this.track(this.releases.add(id));
  }

  private forget(hold: Hold): number | undefined {
    this.holds.remove(hold);
    const row = this.rows.get(hold);
    this.rows.delete(hold);
    return row?.id;
  }

  private track(p: Promise<void>): void {
    this.releasing.add(p);
    void p.finally(() => this.releasing.delete(p));
  }

  /** One statement: the row deleted and its amount off both sums; nothing when it was released already. */
  private async release(id: number): Promise<void> {
    try {
      await this.sql`WITH h AS (DELETE FROM holds WHERE id = ${id} RETURNING account_id, key_id, amount_nano),
        a AS (UPDATE accounts SET held_nano = accounts.held_nano - h.amount_nano FROM h WHERE accounts.id = h.account_id RETURNING accounts.id)
        UPDATE api_keys SET held_nano = api_keys.held_nano - h.amount_nano FROM h WHERE api_keys.id = h.key_id AND EXISTS (SELECT 1 FROM a)`;
      this.unreleased.delete(id);
    } catch (e) {
      this.unreleased.add(id);
      events.writeFailed("ledger", `hold ${id}`, e);
    }
  }

  /** `tx`: a transaction of the caller's that the credit joins (a top-up marks its session credited in the same one). */
  async credit(accountId: number, amountNano: number, kind: CreditKind, note: string | null = null, externalRef: string | null = null, tx: SQL = this.sql): Promise<boolean> {
    checkCreditAmount(amountNano);
    // The unique index on external_ref decides "at most once": a second credit inserts nothing and so adds nothing.
    // A balance taken past the ceiling throws, which rolls back the transaction, the entry with it.
    const credited = async (t: SQL): Promise<boolean> => {
      const rows = await t`WITH e AS (
          INSERT INTO ledger_entries (account_id, kind, amount_nano, note, external_ref, created_at)
          VALUES (${accountId}, ${kind}, ${amountNano}::bigint, ${note}, ${externalRef}, ${Date.now()}::bigint)
          ON CONFLICT (external_ref) WHERE external_ref IS NOT NULL DO NOTHING RETURNING amount_nano)
        UPDATE accounts SET balance_nano = balance_nano + e.amount_nano FROM e WHERE accounts.id = ${accountId} RETURNING accounts.balance_nano::text AS balance`;
      if (rows.length !== 1) return false;
      const after = BigInt(rows[0].balance as string);
      if (after > BigInt(MAX_BALANCE_NANO)) throw balanceCeiling(amountNano, Number(after - BigInt(amountNano)));
      return true;
    };
    return tx === this.sql ? this.sql.begin(credited) : credited(tx);
  }

  async balance(accountId: number): Promise<BalanceView> {
    const [r] = await this.sql`SELECT balance_nano, held_nano FROM accounts WHERE id = ${accountId}`;
    const [balanceNano, reservedNano] = [Number(r.balance_nano), Number(r.held_nano)];
    return { balanceNano, reservedNano, spendableNano: balanceNano - reservedNano };
  }

  async keySpend(keyId: number): Promise<KeySpendView | null> {
    const [r] = await this.sql`SELECT spent_nano, held_nano, budget_nano, budget_period, period_start, period_spent_nano, budget_reached_at FROM api_keys WHERE id = ${keyId}`;
    if (!r) return null;
    const budget = budgetSpend(
      {
        budget: storedBudget(r.budget_nano, r.budget_period),
        periodStart: Number(r.period_start),
        periodSpentNano: Number(r.period_spent_nano),
        reachedAt: r.budget_reached_at === null ? null : Number(r.budget_reached_at),
      },
      this.clock.now(),
    );
    return { spentNano: Number(r.spent_nano), reservedNano: Number(r.held_nano), budget };
  }

  /** A heartbeat, the release of silent instances' holds, and the retry of failed releases; never two at once. Whether the beat succeeded. */
  async tick(): Promise<boolean> {
    return (await this.lease?.tick()) ?? false;
  }

  /** On each good beat: the releases that failed, again (no other instance releases a live instance's holds). */
  private retryReleases(): void {
    for (const id of this.unreleased) this.track(this.release(id));
  }
}

/** The hold insert's foreign key failed: this instance's row is gone. */
function isOwnRowGone(e: unknown): boolean {
  const err = e as { errno?: unknown; constraint?: unknown; message?: unknown };
  return err?.errno === "23503" && (err.constraint === OWN_ROW_KEY || String(err.message).includes(OWN_ROW_KEY));
}
