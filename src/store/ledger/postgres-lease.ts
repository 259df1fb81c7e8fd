import type { SQL } from "bun";
import { databaseUnavailable, type GatewayError } from "../../core/errors.ts";
import { events } from "../../core/events.ts";
import { OperatorError } from "../../core/operator-error.ts";
import type { InstanceView, ReloadRecord } from "./contract.ts";

// An instance's heartbeat on the shared PostgreSQL database, seen as a lease on its own holds
// (docs/database.md, "Heartbeats, fencing and the release of a silent instance's holds"). Others
// may release the holds of an instance silent past the release threshold; so the instance itself
// stops relying on them (fences itself) a margin before that threshold, counted from the sending of
// its last beat that succeeded, and relies on them again only after a beat has succeeded since.
// Silence is counted by an observer only over time its own beats were succeeding: a database that
// was down for everyone makes nobody silent.

/** The database's clock in unix ms: every instance's beats and the release threshold are read on one clock. */
const NOW_MS = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

/** After a failed beat: how soon the next one is tried, so that a database back is noticed at once. */
const RETRY_MS = 250;
/** A beat unanswered this long (or a period, if longer) has failed: a hung connection must not hold off the next ones. */
const BEAT_ANSWER_MS = 2_000;
/** Beyond a period, how long a start waits to see whether a fresh row of its id is still beating. */
const IN_USE_MARGIN_MS = 1_000;

export interface LeaseOptions {
  /** `[cluster] instance_id`. */
  instanceId: string;
  /** `[cluster] hold_timeout_s`, in ms. */
  holdTimeoutMs: number;
  /** Default: a quarter of the timeout, at most 5 s. */
  heartbeatMs?: number;
}

/**
 * The statement that releases holds with the instances they belong to, their amounts off the held
 * sums, reporting per instance; `silent` picks the instances ($1: this instance's id). Two instances
 * running it at once release each hold once: the second's DELETE finds the rows gone.
 */
const releaseWith = (silent: string) => `WITH silent AS (${silent}),
    gone AS (DELETE FROM holds WHERE instance_id IN (SELECT id FROM silent) RETURNING instance_id, account_id, key_id, amount_nano),
    a AS (UPDATE accounts SET held_nano = accounts.held_nano - s.n
          FROM (SELECT account_id, sum(amount_nano) AS n FROM gone GROUP BY account_id) s WHERE accounts.id = s.account_id),
    k AS (UPDATE api_keys SET held_nano = api_keys.held_nano - s.n
          FROM (SELECT key_id, sum(amount_nano) AS n FROM gone GROUP BY key_id) s WHERE api_keys.id = s.key_id)
  SELECT silent.id AS instance, count(gone.instance_id)::int AS holds, coalesce(sum(gone.amount_nano), 0)::text AS nano
  FROM silent LEFT JOIN gone ON gone.instance_id = silent.id GROUP BY silent.id`;

/** A clean stop: this process's row and holds, unless another process holds the id now ($2: this run). */
const OWN_ROW = releaseWith("DELETE FROM instances WHERE id = $1 AND run_id = $2 RETURNING id");
/** After a fence, or at start once claimed: this id's holds, none of which is relied upon (any more); its row stays. */
const OWN_HOLDS = releaseWith("SELECT $1::text AS id");
/** Others silent past the threshold $2, counted only from $3, when this instance's own beats began to succeed (both database clock). */
const SILENT_OTHERS = releaseWith(
  `DELETE FROM instances WHERE id <> $1 AND heartbeat_at < ${NOW_MS} - $2::bigint AND $3::bigint < ${NOW_MS} - $2::bigint RETURNING id`,
);

type Released = { instance: string; holds: number; nano: string }[];

/** The instances heartbeating on the database, with their holds and last reloads (GET /api/admin/status, `gateway reload`). */
export async function listInstances(sql: SQL): Promise<InstanceView[]> {
  const rows = (await sql.unsafe(`SELECT i.id, i.heartbeat_at::text AS at, i.reloaded_at::text AS reloaded_at, i.last_reload,
      count(h.id)::int AS holds, coalesce(sum(h.amount_nano), 0)::text AS nano
    FROM instances i LEFT JOIN holds h ON h.instance_id = i.id GROUP BY i.id ORDER BY i.id`)) as { id: string; at: string; reloaded_at: string | null; last_reload: string | null; holds: number; nano: string }[];
  return rows.map((r) => ({ id: r.id, heartbeatAt: Number(r.at), holds: r.holds, heldNano: Number(r.nano), lastReload: reloadOf(r.reloaded_at, r.last_reload) }));
}

/** A row's last reload; null when none was recorded (or by a version that wrote another shape). */
function reloadOf(at: string | null, text: string | null): InstanceView["lastReload"] {
  if (at === null || text === null) return null;
  try {
    const r = JSON.parse(text) as ReloadRecord;
    return typeof r.reloaded === "boolean" ? { ...r, at: Number(at) } : null;
  } catch {
    return null;
  }
}

export class InstanceLease {
  /** Bumped by every fence: a hold taken under an earlier epoch is no longer relied upon. */
  epoch = 0;
  /** Until a beat succeeds, nothing is relied upon. */
  private fenced = true;
  /** Local monotonic ms: the sending of the last beat that succeeded, plus fenceAfterMs. */
  private validUntil = Number.NEGATIVE_INFINITY;
  /** Database clock: when this instance's current run of good beats began; null while its last beat failed. */
  private healthySince: number | null = null;
  private lastGood: number | null = null;
  private registered = false;
  /** This process's claim on its id's row (docs/scaling.md#the-config-lines). */
  private readonly runId = crypto.randomUUID();
  /** A fence left holds of this instance in the database; they are released before it resumes. */
  private ownHoldsLeft = false;
  private readonly listeners: ((why: GatewayError) => void)[] = [];
  private beatTimer: ReturnType<typeof setTimeout> | null = null;
  private fenceTimer: ReturnType<typeof setTimeout> | null = null;
  private ticking: Promise<boolean> | null = null;
  private stopped = false;
  /** Why the last beat failed: what a failed start reports. */
  private lastFailure: unknown = null;

  constructor(
    private readonly sql: SQL,
    private readonly opts: LeaseOptions,
    /** Extra work on each good beat (the ledger's release retries). */
    private readonly onBeat: () => void = () => {},
    private readonly clock: () => number = () => performance.now(),
  ) {}

  get instanceId(): string {
    return this.opts.instanceId;
  }

  /** The heartbeat's period. */
  get every(): number {
    return this.opts.heartbeatMs ?? Math.min(5_000, Math.floor(this.opts.holdTimeoutMs / 4));
  }

  /**
   * Silent this long (database clock), an instance has its holds released by the others: the timeout
   * less one period, so that one found a period late is still released within the timeout.
   */
  get releaseAfterMs(): number {
    return this.opts.holdTimeoutMs - this.every;
  }

  /**
   * Unable to beat this long since sending its last good beat (its own monotonic clock), an instance
   * fences itself: half a period before anyone may release its holds, since the row's time is read
   * after the sending, and timers fire late on a busy machine.
   */
  get fenceAfterMs(): number {
    return this.releaseAfterMs - Math.floor(this.every / 2);
  }

  /**
   * Claims the id, releases an earlier life's holds, and beats every period from now on. Throws when
   * the database does not answer, and refuses (OperatorError) an id another running instance holds.
   */
  async start(): Promise<void> {
    await this.claim();
    // Claimed, and nothing taken yet: every hold under this id is an earlier life's.
    await this.release(OWN_HOLDS, [this.opts.instanceId]);
    this.registered = true;
    if (!(await this.tick())) {
      this.stop();
      throw this.lastFailure ?? new Error(`the first heartbeat of instance ${this.opts.instanceId} failed`);
    }
  }

  /**
   * Makes this process the holder of its id's row, atomically: two processes started at the same
   * moment under one id (one config copied with a fixed id) both reading "free" and both serving
   * would each take the other's holds for an earlier life's. A row silent past the release threshold
   * (or none) is taken in one statement. A fresher row is an earlier life that just died or another
   * running instance: watched for a period and a margin, it is taken only if it did not beat
   * meanwhile, by a compare-and-set on that beat, so of two starters at most one wins it.
   */
  private async claim(): Promise<void> {
    const id = this.opts.instanceId;
    // Taken when absent, silent past the threshold, or (the second time) still at the beat seen before the watch.
    const take = async (seenAt: string | null) =>
      (
        await this.sql.unsafe(
          `INSERT INTO instances (id, heartbeat_at, run_id) VALUES ($1, ${NOW_MS}, $2)
           ON CONFLICT (id) DO UPDATE SET heartbeat_at = EXCLUDED.heartbeat_at, run_id = EXCLUDED.run_id
           WHERE instances.heartbeat_at < ${NOW_MS} - $3::bigint OR instances.heartbeat_at = $4::bigint RETURNING id`,
          [id, this.runId, this.releaseAfterMs, seenAt],
        )
      ).length === 1;
    if (await take(null)) return;
    const [seen] = (await this.sql.unsafe(`SELECT heartbeat_at AS at FROM instances WHERE id = $1`, [id])) as { at: string }[];
    await Bun.sleep(this.every + IN_USE_MARGIN_MS);
    if (await take(seen?.at ?? null)) return;
    const [now] = (await this.sql.unsafe(`SELECT ${NOW_MS} - heartbeat_at AS ago FROM instances WHERE id = $1`, [id])) as { ago: string }[];
    throw new OperatorError(
      `[cluster] instance_id "${id}" is in use by a running instance (its heartbeat came ${Number(now?.ago ?? 0)} ms ago): give each instance its own id (docs/scaling.md#the-config-lines)`,
    );
  }

  /** Writes this run's last reload on its row (only while the row is its own). */
  async recordReload(reload: ReloadRecord): Promise<void> {
    await this.sql.unsafe(`UPDATE instances SET reloaded_at = ${NOW_MS}, last_reload = $3 WHERE id = $1 AND run_id = $2`, [this.opts.instanceId, this.runId, JSON.stringify(reload)]);
  }

  /** Called with the reason when this instance fences itself: what it has in flight must end. */
  onFence(fn: (why: GatewayError) => void): void {
    this.listeners.push(fn);
  }

  /** Whether holds taken now (and under the current epoch) may be relied upon. Fences when the lease has run out. */
  valid(): boolean {
    if (!this.fenced && this.clock() >= this.validUntil) this.fence("its heartbeat has failed for too long");
    return !this.fenced;
  }

  /**
   * Why this instance cannot take a paid request now (GET /readyz), or null. Its heartbeat is its
   * probe of writing: a database that answers reads but refuses writes (a standby after a failover,
   * default_transaction_read_only, a full disk) fails the beat at once, while a SELECT still succeeds.
   */
  writeRefusal(): GatewayError | null {
    if (!this.valid()) return databaseUnavailable(new Error(`instance ${this.opts.instanceId} is fenced`));
    if (this.healthySince === null) return databaseUnavailable(this.lastFailure);
    return null;
  }

  /**
   * Stops relying on every hold taken so far: the epoch moves on, and whatever is in flight is ended
   * through the listeners. Also called when the database shows that another instance released this
   * one (its row was gone).
   */
  fence(reason: string): void {
    if (this.fenced) return;
    this.fenced = true;
    this.epoch++;
    this.ownHoldsLeft = true;
    events.instanceFenced({ instance: this.opts.instanceId, reason });
    const why = databaseUnavailable(new Error(`instance ${this.opts.instanceId} fenced: ${reason}`));
    for (const fn of this.listeners) fn(why);
  }

  /** A beat, then (when it succeeded) the release of silent instances' holds; never two at once. True when the beat succeeded. */
  tick(): Promise<boolean> {
    this.ticking ??= this.beatAndLook().finally(() => {
      this.ticking = null;
      this.schedule();
    });
    return this.ticking;
  }

  /** Runs a tick, and one more when this one found the lease fenced; whether holds may be relied upon after. */
  async renew(): Promise<boolean> {
    await this.tick();
    if (!this.valid()) await this.tick();
    return this.valid();
  }

  stop(): void {
    this.stopped = true;
    if (this.beatTimer) clearTimeout(this.beatTimer);
    if (this.fenceTimer) clearTimeout(this.fenceTimer);
  }

  /**
   * A clean stop, once every request has ended: the instance's row goes, with any hold still under
   * it (none will be posted now), so `instances` lists only the running ones. A failure leaves the
   * row for the others to release after the timeout, as after a crash.
   */
  async retire(): Promise<void> {
    try {
      await this.release(OWN_ROW, [this.opts.instanceId, this.runId]);
    } catch (e) {
      events.writeFailed("ledger", `retiring ${this.opts.instanceId}`, e);
    }
  }

  /** Resolves when the tick under way (if any) is over. */
  async idle(): Promise<void> {
    await this.ticking;
  }

  private schedule(): void {
    if (this.stopped) return;
    if (this.beatTimer) clearTimeout(this.beatTimer);
    this.beatTimer = setTimeout(() => void this.tick(), this.healthySince === null ? Math.min(RETRY_MS, this.every) : this.every);
    this.beatTimer.unref?.();
  }

  private async beatAndLook(): Promise<boolean> {
    const sentAt = this.clock();
    let at: number;
    let swept: Released[number] | undefined;
    try {
      at = await this.beat();
      if (this.ownHoldsLeft) {
        [swept] = await this.release(OWN_HOLDS, [this.opts.instanceId]);
        this.ownHoldsLeft = false;
      }
    } catch (e) {
      this.lastFailure = e;
      if (this.healthySince !== null) events.writeFailed("ledger", `heartbeat of ${this.opts.instanceId}`, e);
      this.healthySince = this.lastGood = null;
      this.valid();
      return false;
    }
    // An observer that went a whole release period without a beat (a frozen process) knows nothing
    // of that time: its healthy period starts again too.
    if (this.lastGood === null || at - this.lastGood > this.releaseAfterMs) this.healthySince = at;
    this.lastGood = at;
    this.validUntil = sentAt + this.fenceAfterMs;
    if (this.fenced && this.clock() < this.validUntil) {
      this.fenced = false;
      if (this.epoch > 0) events.instanceResumed({ instance: this.opts.instanceId, holds: swept?.holds ?? 0, nano: Number(swept?.nano ?? 0) });
    }
    this.armFence();
    try {
      const rows = await this.release(SILENT_OTHERS, [this.opts.instanceId, this.releaseAfterMs, this.healthySince]);
      for (const r of rows) {
        if (r.holds > 0) events.holdsReleased({ instance: r.instance, holds: r.holds, nano: Number(r.nano), timeoutS: this.opts.holdTimeoutMs / 1000 });
      }
      this.onBeat();
    } catch (e) {
      events.writeFailed("ledger", `release of silent instances by ${this.opts.instanceId}`, e);
    }
    return true;
  }

  /** Upserts this instance's row on the database's clock; answers its time. */
  private async beat(): Promise<number> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const wait = Math.max(this.every, BEAT_ANSWER_MS);
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(Object.assign(new Error(`no answer within ${wait} ms`), { code: "ERR_POSTGRES_CONNECTION_TIMEOUT" })), wait);
    });
    try {
      const [r] = await Promise.race([
        this.sql.unsafe(
          `INSERT INTO instances (id, heartbeat_at, run_id) VALUES ($1, ${NOW_MS}, $2)
           ON CONFLICT (id) DO UPDATE SET heartbeat_at = EXCLUDED.heartbeat_at WHERE instances.run_id = EXCLUDED.run_id
           RETURNING heartbeat_at AS at, (xmax = 0) AS inserted`,
          [this.opts.instanceId, this.runId],
        ),
        late,
      ]);
      // Another process holds the id now: it took this one's row while this one was silent past
      // the release threshold. Nothing of this one's is relied upon until that process lets it go.
      if (!r) throw new Error(`[cluster] instance_id "${this.opts.instanceId}" was taken by another process while this one was silent`);
      // Inserted although registered: another instance took this one for silent and released its
      // holds. None of them is relied upon from here (the row is back, under the same id).
      if (r.inserted && this.registered) this.fence("another instance released its holds");
      this.registered = true;
      return Number(r.at);
    } finally {
      clearTimeout(timer);
    }
  }

  /** When the lease runs out with no beat succeeding meanwhile, the fence falls on time rather than on the next beat's failure. */
  private armFence(): void {
    if (this.fenceTimer) clearTimeout(this.fenceTimer);
    this.fenceTimer = setTimeout(() => void this.valid(), Math.max(0, this.validUntil - this.clock()) + 1);
    this.fenceTimer.unref?.();
  }

  private async release(statement: string, params: unknown[]): Promise<Released> {
    return (await this.sql.unsafe(statement, params)) as Released;
  }
}
