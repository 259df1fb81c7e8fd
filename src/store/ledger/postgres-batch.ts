import type { SQL } from "bun";
import type { Rider } from "../../ledger/hold.ts";

// The reserves and the releases of one turn of the event loop, each kind sent to PostgreSQL as one
// statement, as the request log gathers its rows (store/request-log/postgres.ts): a statement per
// request cost the gateway most of its CPU on PostgreSQL (Bun's client building the query and reading
// its answer) and PostgreSQL its per-statement work (bench/RESULTS.md). A batch grants only what
// is certain to be granted in the order given; anything else (a refusal, a batch the database
// refused) is decided again alone, by the one-request statement, so every request gets the verdict
// and the error it got before (docs/database.md#the-money-path-on-postgresql).

/** Items per statement: eight arrays whatever the count, but one turn's answer should stay small. */
const MAX_BATCH = 500;

/**
 * The money statements of one instance, one under way at a time whatever their kind (reserves,
 * posts, voids), in the order their batches asked. They all lock the same account's row: two under
 * way at once queued on it inside PostgreSQL, and the second then re-checked its rows against the
 * first's commit (EvalPlanQual, a second start of its whole plan): a fifth of PostgreSQL's CPU at
 * c=16 (bench/RESULTS.md, "PostgreSQL's own work per request"). Queued here instead, the waiting
 * costs nothing and each statement's rows are current when it reads them. With many accounts too:
 * a batch carries every request that queued meanwhile, so two batches mostly share some
 * account's row (50 accounts at c=16 and c=64: throughput and p99 no worse, PostgreSQL's CPU 0.75
 * to 0.92×; bench/RESULTS.md, "The PostgreSQL lane with many accounts").
 */
export class Lane {
  /** Statements under way, and a flush about to run. */
  private busy = 0;
  private readonly queue: (() => void)[] = [];

  /** `go` runs, in a later turn, once nothing else of this lane is under way. */
  enter(go: () => void): void {
    this.queue.push(go);
    this.next();
  }

  /** A statement of this lane is under way until the `leave` that follows. */
  hold(): void {
    this.busy++;
  }

  leave(): void {
    this.busy--;
    this.next();
  }

  private next(): void {
    if (this.busy > 0) return;
    const go = this.queue.shift();
    if (!go) return;
    this.busy++;
    setImmediate(() => {
      try {
        go();
      } finally {
        this.leave();
      }
    });
  }
}

/**
 * One turn's items, sent together by `send`; each item's promise settles with its own answer. While
 * a statement of the lane is under way, the items that arrive wait for its answer and then go
 * together: at c=16 one turn held about one request, so a statement per turn was still about one
 * per request (bench/RESULTS.md). The wait costs a request little, since the statements of one
 * account queue on its row in PostgreSQL anyway; two under way at once measured worse.
 */
export class TurnBatch<I, R> {
  private pending: { item: I; resolve(r: R | Promise<R>): void; reject(e: unknown): void }[] = [];
  private scheduled = false;

  /**
   * `send` answers each item's result, or a promise of it (which may reject for that item alone).
   * `lane`: shared with the other batches whose statements must not be under way beside these.
   */
  constructor(
    private readonly send: (items: I[]) => Promise<(R | Promise<R>)[]>,
    private readonly lane: Lane = new Lane(),
  ) {}

  add(item: I): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    this.lane.enter(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    const all = this.pending;
    this.pending = [];
    for (let i = 0; i < all.length; i += MAX_BATCH) {
      const chunk = all.slice(i, i + MAX_BATCH);
      this.lane.hold();
      this.send(chunk.map((w) => w.item))
        .then(
          // An item decided alone (its own statement) keeps this batch under way until it answers.
          (rs) => {
            chunk.forEach((w, j) => w.resolve(rs[j]!));
            return Promise.allSettled(rs);
          },
          (e) => chunk.forEach((w) => w.reject(e)),
        )
        .finally(() => {
          // Behind the batches that asked while this one was under way.
          if (this.pending.length > 0) this.schedule();
          this.lane.leave();
        });
    }
  }
}

/**
 * A `bigint[]` parameter as PostgreSQL's array text, joined here: Bun's client quotes an array's
 * elements one by one, 10 µs of CPU a statement of four 8-item arrays against this (bench/RESULTS.md).
 * Whole numbers only (ids, nano-dollars), which print without quotes or exponent.
 */
const bigints = (xs: number[]): string => `{${xs.join(",")}}`;

export interface ReserveItem {
  accountId: number;
  keyId: number;
  amountNano: number;
}

/**
 * Takes holds for several reserves at once: $1 amounts, $2 accounts, $3 keys (in arrival order),
 * $4 instance, $5 now, $6-$8 the periods' starts (ledger/budget.ts periodStarts). The accounts' rows
 * are locked before the keys' (the lock order of every money statement), each set in id order so
 * that two batches never wait for each other in a cycle. An item is granted when the items of its
 * account up to it, refused or not, fit the account's spendable balance, and those of its key fit
 * the key's quota and budget: conservative, so the granted ones never overdraw; an item refused here
 * may still fit once its neighbours are held, and is tried again alone. Answers (ord, hold_id) for
 * the granted items only. The hold ids are drawn first, so that each is known by its item.
 *
 * The rows are found by `= ANY` of the arrays (an index scan, or a scan of a table that small) rather
 * than `IN` the items (a hash of them built for every table), and the ids drawn from the holds'
 * sequence by name (pg_get_serial_sequence searched the catalog for every row): 14 to 17 % less of
 * PostgreSQL's CPU for a reserve and a post batch of 4 or 8 (bench/RESULTS.md, "PostgreSQL's own
 * work per request").
 */
const RESERVE_MANY = `WITH items AS (
    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS t(amount, account_id, key_id, ord)),
  a0 AS (SELECT id, balance_nano - held_nano AS spendable FROM accounts
    WHERE id = ANY($2::bigint[]) ORDER BY id FOR UPDATE),
  k0 AS (SELECT id, account_id, quota_nano, spent_nano, held_nano, budget_nano,
      CASE WHEN period_start = (CASE budget_period WHEN 'day' THEN $6::bigint WHEN 'week' THEN $7::bigint ELSE $8::bigint END)
        THEN period_spent_nano ELSE 0 END AS period_spent
    FROM api_keys WHERE id = ANY($3::bigint[]) AND (SELECT count(*) FROM a0) >= 0 ORDER BY id FOR UPDATE),
  c AS (SELECT i.ord, i.amount, i.account_id, i.key_id, a0.spendable, k0.quota_nano, k0.spent_nano, k0.held_nano, k0.budget_nano, k0.period_spent,
      sum(i.amount) OVER (PARTITION BY i.account_id ORDER BY i.ord) AS account_upto,
      sum(i.amount) OVER (PARTITION BY i.key_id ORDER BY i.ord) AS key_upto
    FROM items i JOIN a0 ON a0.id = i.account_id JOIN k0 ON k0.id = i.key_id AND k0.account_id = i.account_id),
  take AS MATERIALIZED (SELECT ord, amount, account_id, key_id, nextval('holds_id_seq') AS hold_id FROM c
    WHERE account_upto <= spendable
      AND (quota_nano IS NULL OR spent_nano + held_nano + key_upto <= quota_nano)
      AND (budget_nano IS NULL OR period_spent + held_nano + key_upto <= budget_nano)),
  a AS (UPDATE accounts SET held_nano = accounts.held_nano + s.n
    FROM (SELECT account_id, sum(amount) AS n FROM take GROUP BY account_id) s WHERE accounts.id = s.account_id),
  k AS (UPDATE api_keys SET held_nano = api_keys.held_nano + s.n
    FROM (SELECT key_id, sum(amount) AS n FROM take GROUP BY key_id) s WHERE api_keys.id = s.key_id),
  h AS (INSERT INTO holds (id, account_id, key_id, amount_nano, instance_id, created_at)
    SELECT hold_id, account_id, key_id, amount, $4, $5::bigint FROM take)
SELECT ord::int AS ord, hold_id FROM take`;

/** The hold ids of the items granted, by position; null where the item must be decided alone. */
export async function reserveMany(sql: SQL, items: ReserveItem[], instanceId: string, starts: number[]): Promise<(number | null)[]> {
  const rows = await sql.unsafe(RESERVE_MANY, [
    bigints(items.map((i) => i.amountNano)),
    bigints(items.map((i) => i.accountId)),
    bigints(items.map((i) => i.keyId)),
    instanceId,
    Date.now(),
    ...starts,
  ]);
  const out: (number | null)[] = items.map(() => null);
  for (const r of rows as { ord: number; hold_id: string | number }[]) out[r.ord - 1] = Number(r.hold_id);
  return out;
}

/** Several holds' rows deleted and their amounts off both sums; a hold released already (by another instance) counts nothing. */
const RELEASE_MANY = `WITH h AS (DELETE FROM holds WHERE id = ANY($1::bigint[]) RETURNING account_id, key_id, amount_nano),
  a AS (UPDATE accounts SET held_nano = accounts.held_nano - s.n
    FROM (SELECT account_id, sum(amount_nano) AS n FROM h GROUP BY account_id) s WHERE accounts.id = s.account_id RETURNING accounts.id)
UPDATE api_keys SET held_nano = api_keys.held_nano - s.n
  FROM (SELECT key_id, sum(amount_nano) AS n FROM h GROUP BY key_id) s WHERE api_keys.id = s.key_id AND (SELECT count(*) FROM a) >= 0`;

export async function releaseMany(sql: SQL, ids: number[]): Promise<void> {
  await sql.unsafe(RELEASE_MANY, [bigints(ids)]);
}

export interface PostItem {
  holdId: number;
  accountId: number;
  keyId: number;
  costNano: number;
  requestId: string;
  /** The log row's INSERT for this item (a `Rider`'s params), or null when it has none. */
  rowParams: unknown[] | null;
}

/**
 * Posts several holds at once, each charged its whole cost: $1 holds, $2 accounts, $3 keys, $4 costs,
 * $5 requests (arrival order), $6 now, $7-$9 the periods' starts. All or nothing: when any charge
 * would meet a cap (the balance, the key's quota or budget, counted in order over the batch), or a
 * row is missing, the final SELECT divides by zero (by a column, so that the planner cannot fold it beforehand), so that the statement and all it wrote are
 * undone, and the posts are made one by one by the one-request statement, which caps and records the
 * shortfall. `logs`: the log rows' multi-row INSERT, a part of the same statement.
 */
const postMany = (logs: string | null) => `WITH ${logs ? `log AS (${logs}),\n` : ""}items AS (
    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[]) WITH ORDINALITY AS t(hold_id, account_id, key_id, cost, request_id, ord)),
  h AS (DELETE FROM holds WHERE id = ANY($1::bigint[]) RETURNING id, amount_nano),
  a0 AS (SELECT id, balance_nano FROM accounts WHERE id = ANY($2::bigint[]) ORDER BY id FOR UPDATE),
  k0 AS (SELECT id, quota_nano, spent_nano, budget_nano, period_start, period_spent_nano,
      (CASE budget_period WHEN 'day' THEN $7::bigint WHEN 'week' THEN $8::bigint ELSE $9::bigint END) AS cur
    FROM api_keys WHERE id = ANY($3::bigint[]) AND (SELECT count(*) FROM a0) >= 0 ORDER BY id FOR UPDATE),
  c AS (SELECT i.*, coalesce(h.amount_nano, 0) AS released, a0.balance_nano, k0.quota_nano, k0.spent_nano, k0.budget_nano,
      CASE WHEN k0.period_start = k0.cur THEN k0.period_spent_nano ELSE 0 END AS period_spent,
      sum(i.cost) OVER (PARTITION BY i.account_id ORDER BY i.ord) AS account_upto,
      sum(i.cost) OVER (PARTITION BY i.key_id ORDER BY i.ord) AS key_upto
    FROM items i JOIN a0 ON a0.id = i.account_id JOIN k0 ON k0.id = i.key_id LEFT JOIN h ON h.id = i.hold_id),
  ok AS (SELECT count(*) = (SELECT count(*) FROM items) AND coalesce(bool_and(account_upto <= GREATEST(balance_nano, 0)
      AND (quota_nano IS NULL OR key_upto <= GREATEST(quota_nano - spent_nano, 0))
      AND (budget_nano IS NULL OR key_upto <= GREATEST(budget_nano - period_spent, 0))), true) AS fits FROM c),
  a AS (UPDATE accounts SET balance_nano = accounts.balance_nano - s.charged, held_nano = accounts.held_nano - s.released
    FROM (SELECT account_id, sum(cost) AS charged, sum(released) AS released FROM c GROUP BY account_id) s WHERE accounts.id = s.account_id),
  k AS (UPDATE api_keys SET spent_nano = k0.spent_nano + s.charged, held_nano = api_keys.held_nano - s.released,
      period_spent_nano = CASE WHEN k0.budget_nano IS NULL THEN k0.period_spent_nano WHEN k0.period_start = k0.cur THEN k0.period_spent_nano + s.charged ELSE s.charged END,
      period_start = CASE WHEN k0.budget_nano IS NULL THEN k0.period_start ELSE k0.cur END
    FROM (SELECT key_id, sum(cost) AS charged, sum(released) AS released FROM c GROUP BY key_id) s, k0 WHERE api_keys.id = s.key_id AND k0.id = s.key_id),
  e AS (INSERT INTO ledger_entries (account_id, kind, amount_nano, shortfall_nano, key_id, request_id, created_at)
    SELECT account_id, 'charge', -cost, 0, key_id, request_id, $6::bigint FROM c WHERE cost > 0 ORDER BY ord)
SELECT 1 / (CASE WHEN fits THEN 1 ELSE 0 END) AS done FROM ok`;

const POST_PARAMS = 9;
const postTexts = new Map<string, string>();

/**
 * Charges every item its whole cost in one statement with its log rows (`log`: the request log's
 * write of several rows, one text whatever their count), or throws and changes nothing.
 */
export async function postAll(sql: SQL, items: PostItem[], starts: number[], log: NonNullable<Rider["many"]> | null): Promise<void> {
  const rows = items.filter((i) => i.rowParams).map((i) => i.rowParams!);
  const logs = log && rows.length > 0 ? log.text : null;
  const key = logs ?? "";
  let text = postTexts.get(key);
  if (!text) {
    text = postMany(logs ? logs.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + POST_PARAMS}`) : null);
    postTexts.set(key, text);
  }
  await sql.unsafe(text, [
    bigints(items.map((i) => i.holdId)),
    bigints(items.map((i) => i.accountId)),
    bigints(items.map((i) => i.keyId)),
    bigints(items.map((i) => i.costNano)),
    items.map((i) => i.requestId),
    Date.now(),
    ...starts,
    ...(logs ? log!.params(rows) : []),
  ]);
}
