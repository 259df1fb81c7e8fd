import { and, asc, count, desc, eq, gt, gte, isNotNull, isNull, lt, lte, max, or, sql, type SQL } from "drizzle-orm";
import { changeWatch } from "../engine/sqlite/change-watch.ts";
import type { Db } from "../engine/sqlite/client.ts";
import { accounts, emailVerifications, ledgerEntries } from "../schema/sqlite.ts";
import { countRegistrationCredit } from "../settings/sqlite.ts";
import type { Ledger } from "../ledger/sqlite.ts";
import type { Claim } from "../codes/contract.ts";
import { alreadyClosed, closedAddress, FORFEIT_NOTE, STARTING_BALANCE_NANO, type Account, type ClosedAccount, type AccountLogin, type AccountProfile, type AccountStore, type LedgerEntry, type NewAccount, type NewVerification, type StatementItem, type StatementPosition, type VerificationState, type Verified } from "./contract.ts";
import { accountColumns, accountExists, checkDebitAmount, closureRefused, checkThreshold, DAY_MS, dayOf, debitRefused, isEarlier, newestFirst, noAccount, normalizedEmail } from "./rules.ts";

// The accounts' rows and their ledger history, for the CLI, the dashboard and first start: cold
// paths, through the query builder, async like PostgreSQL's. The per-request money (reserve,
// charge, credit) is ledger/sqlite.ts's.

const ACCOUNT = accountColumns(accounts);

/** An account by its address, at once: what a transaction of this file checks before it writes. */
const accountByEmail = (db: Db, email: string): Account | null => db.select(ACCOUNT).from(accounts).where(eq(accounts.email, email.trim().toLowerCase())).get() ?? null;

const LOGIN = { id: accounts.id, passwordHash: accounts.passwordHash, disabledAt: accounts.disabledAt };

/** The accounts on SQLite, on one database and its ledger. */
export class Accounts implements AccountStore {
  constructor(
    private readonly db: Db,
    private readonly ledger: Ledger,
  ) {}

  async find(email: string): Promise<Account | null> {
    return accountByEmail(this.db, email);
  }

  async findById(id: number): Promise<Account | null> {
    return this.db.select(ACCOUNT).from(accounts).where(eq(accounts.id, id)).get() ?? null;
  }

  /** A new account; its opening balance is a ledger row like every other balance change. */
  async create(email: string, opts: NewAccount = {}): Promise<Account> {
    const normalized = normalizedEmail(email);
    // One write transaction (a savepoint inside an open write batch): the day's count, the row and its
    // credit together, or none of them.
    return this.db.$client.transaction(() => {
      if (accountByEmail(this.db, normalized)) throw accountExists(normalized);
      const now = Date.now();
      const row = this.db
        .insert(accounts)
        .values({ email: normalized, passwordHash: opts.passwordHash ?? null, admin: opts.admin ?? false, createdAt: now })
        .returning({ id: accounts.id })
        .get();
      if (opts.invite) {
        // SQLite's claim answers at once, inside this transaction.
        const claim = opts.invite(row.id) as Claim;
        this.ledger.credit(row.id, claim.amountNano, "redemption", claim.note, claim.externalRef);
        return accountByEmail(this.db, normalized)!;
      }
      let opening = opts.verification ? 0 : (opts.balanceNano ?? STARTING_BALANCE_NANO);
      if (opts.verification) this.db.insert(emailVerifications).values({ accountId: row.id, ...opts.verification, sentAt: now }).run();
      if (opening > 0 && opts.dailyLimitNano !== undefined && !countRegistrationCredit(this.db, opening, opts.dailyLimitNano, now)) opening = 0;
      if (opening > 0) this.ledger.credit(row.id, opening, opts.kind ?? "registration_credit", "starting balance");
      return accountByEmail(this.db, normalized)!;
    }).immediate();
  }

  async count(): Promise<number> {
    return this.db.select({ n: count() }).from(accounts).get()!.n;
  }

  /** Every account, oldest first. Holds of running requests are not in the file (store/ledger/holds.ts). */
  async list(): Promise<Account[]> {
    return this.db.select(ACCOUNT).from(accounts).orderBy(asc(accounts.id)).all();
  }

  /** The account's newest ledger entries, newest first. */
  async recentEntries(accountId: number, limit: number): Promise<LedgerEntry[]> {
    return this.db.select().from(ledgerEntries).where(eq(ledgerEntries.accountId, accountId)).orderBy(desc(ledgerEntries.id)).limit(limit).all();
  }

  /**
   * A correcting entry (`operator_debit`): takes money back with a note saying why. Never takes the
   * balance below zero, checked inside the write transaction so that a charge committed meanwhile
   * counts; nor below what running requests hold (`heldNano`, the serving process's in-memory holds).
   */
  async debit(accountId: number, amountNano: number, note: string): Promise<number> {
    // What running requests hold is in this process's ledger (SQLite's holds live in memory): a debit leaves it.
    const heldNano = this.ledger.holds.account(accountId);
    checkDebitAmount(amountNano);
    // Immediate: the write lock is taken at BEGIN, so the balance read is the one the debit changes.
    const balance = this.db.transaction(
      (tx) => {
        const row = tx.select({ balanceNano: accounts.balanceNano }).from(accounts).where(eq(accounts.id, accountId)).get();
        if (!row) throw noAccount(accountId);
        if (row.balanceNano - heldNano < amountNano) throw debitRefused(amountNano, row.balanceNano, heldNano);
        tx.insert(ledgerEntries).values({ accountId, kind: "operator_debit", amountNano: -amountNano, note, createdAt: Date.now() }).run();
        tx.update(accounts).set({ balanceNano: sql`${accounts.balanceNano} - ${amountNano}` }).where(eq(accounts.id, accountId)).run();
        return row.balanceNano - amountNano;
      },
      { behavior: "immediate" },
    );
    // Written behind the Ledger's back: its copy of this balance must go.
    changeWatch(this.db.$client).forget();
    return balance;
  }

  /** Disables the account (its keys and sessions are refused) or enables it; false when it already was so. */
  async setDisabled(accountId: number, disabled: boolean, now = Date.now()): Promise<boolean> {
    const changed = this.db
      .update(accounts)
      .set({ disabledAt: disabled ? now : null })
      .where(and(eq(accounts.id, accountId), disabled ? isNull(accounts.disabledAt) : isNotNull(accounts.disabledAt)))
      .returning({ id: accounts.id })
      .all();
    changeWatch(this.db.$client).forget();
    return changed.length > 0;
  }

  /** Marks an account admin (it sees the dashboard's admin page and routes) or not; false when it already was so. */
  async setAdmin(accountId: number, admin: boolean): Promise<boolean> {
    return this.db.update(accounts).set({ admin }).where(and(eq(accounts.id, accountId), eq(accounts.admin, !admin))).returning({ id: accounts.id }).all().length > 0;
  }

  /** What each account's charges took from its balance since `since` (unix ms), by account id: one index range each. */
  async chargedSince(accountIds: number[], since: number): Promise<Map<number, number>> {
    const charged = new Map<number, number>();
    for (const accountId of accountIds) {
      const row = this.db
        .select({ nano: sql<number>`COALESCE(-SUM(${ledgerEntries.amountNano}), 0)` })
        .from(ledgerEntries)
        .where(and(eq(ledgerEntries.accountId, accountId), gte(ledgerEntries.createdAt, since), eq(ledgerEntries.kind, "charge")))
        .get();
      charged.set(accountId, row?.nano ?? 0);
    }
    return charged;
  }

  // The dashboard's view of an account: what a login checks, what GET /api/me shows.

  async findLogin(email: string): Promise<AccountLogin | null> {
    return this.db.select(LOGIN).from(accounts).where(eq(accounts.email, email.trim().toLowerCase())).get() ?? null;
  }

  async loginOf(accountId: number): Promise<AccountLogin | null> {
    return this.db.select(LOGIN).from(accounts).where(eq(accounts.id, accountId)).get() ?? null;
  }

  async profileOf(accountId: number): Promise<AccountProfile | null> {
    return this.db.select({ ...ACCOUNT, lowBalanceNotifiedAt: accounts.lowBalanceNotifiedAt }).from(accounts).where(eq(accounts.id, accountId)).get() ?? null;
  }

  async setPasswordHash(accountId: number, hash: string): Promise<void> {
    this.db.update(accounts).set({ passwordHash: hash }).where(eq(accounts.id, accountId)).run();
  }

  async setEmail(accountId: number, email: string): Promise<void> {
    const normalized = normalizedEmail(email);
    this.db.$client.transaction(() => {
      const holder = accountByEmail(this.db, normalized);
      if (holder && holder.id !== accountId) throw accountExists(normalized);
      const set = this.db.update(accounts).set({ email: normalized }).where(and(eq(accounts.id, accountId), isNull(accounts.closedAt))).returning({ id: accounts.id }).all();
      if (set.length === 0) throw alreadyClosed(accountId);
    }).immediate();
  }

  /** The spendable amount below which the dashboard shows its notice; null: no notice. */
  async setLowBalanceThreshold(accountId: number, nano: number | null): Promise<void> {
    checkThreshold(nano);
    this.db.update(accounts).set({ lowBalanceNano: nano }).where(eq(accounts.id, accountId)).run();
  }

  // The account holder's statement (GET /api/ledger): every credit and debit on its own, the charges
  // summed per UTC day, newest first, a page at a time.

  async statementPage(accountId: number, upTo: number, before: StatementPosition | null, limit: number): Promise<StatementItem[]> {
    const mine = and(eq(ledgerEntries.accountId, accountId), lte(ledgerEntries.id, upTo));
    const earlier = (p: StatementPosition) =>
      and(lte(ledgerEntries.createdAt, p.createdAt), or(lt(ledgerEntries.createdAt, p.createdAt), lt(ledgerEntries.id, p.id)));
    const newest = [desc(ledgerEntries.createdAt), desc(ledgerEntries.id)];
    const items: StatementItem[] = this.db
      .select()
      .from(ledgerEntries)
      // The literal, not a parameter: SQLite uses a partial index only when the query states its WHERE.
      .where(and(mine, sql`${ledgerEntries.kind} <> 'charge'`, before ? earlier(before) : undefined))
      .orderBy(...newest)
      .limit(limit)
      .all()
      .map((e) => ({ kind: e.kind as never, amountNano: e.amountNano, note: e.note, externalRef: e.externalRef, createdAt: e.createdAt, at: { createdAt: e.createdAt, id: e.id } }));
    const charges = and(mine, eq(ledgerEntries.kind, "charge"));
    let groups = 0;
    let dayBefore: number | null = null;
    while (groups < limit) {
      const bound: SQL | undefined = dayBefore === null ? (before ? earlier(before) : undefined) : lt(ledgerEntries.createdAt, dayBefore);
      const next: { createdAt: number } | undefined = this.db.select({ createdAt: ledgerEntries.createdAt }).from(ledgerEntries).where(and(charges, bound)).orderBy(...newest).limit(1).get();
      if (!next) break;
      const start: number = next.createdAt - (((next.createdAt % DAY_MS) + DAY_MS) % DAY_MS);
      dayBefore = start;
      const inDay = and(charges, gte(ledgerEntries.createdAt, start), lt(ledgerEntries.createdAt, start + DAY_MS));
      const latest = this.db.select({ createdAt: ledgerEntries.createdAt, id: ledgerEntries.id }).from(ledgerEntries).where(inDay).orderBy(...newest).limit(1).get()!;
      // A day whose latest charge is not before the cursor was shown whole on an earlier page.
      if (before && !isEarlier(latest, before)) continue;
      const sum = this.db.select({ amountNano: sql<number>`SUM(${ledgerEntries.amountNano})`, count: count() }).from(ledgerEntries).where(inDay).get()!;
      items.push({ kind: "charges", day: dayOf(start), amountNano: sum.amountNano, count: sum.count, createdAt: latest.createdAt, at: latest });
      groups++;
    }
    return newestFirst(items, limit);
  }

  /** The newest ledger entry's id (0 for none): where a statement's pages stop, so entries written meanwhile wait for the next first page. */
  async newestLedgerId(): Promise<number> {
    return this.db.select({ id: max(ledgerEntries.id) }).from(ledgerEntries).get()?.id ?? 0;
  }

  // A registration's address check (docs/dashboard.md#address-verification).

  async verificationOf(accountId: number): Promise<VerificationState | null> {
    const row = this.db.select({ verifiedAt: emailVerifications.verifiedAt, sentAt: emailVerifications.sentAt }).from(emailVerifications).where(eq(emailVerifications.accountId, accountId)).get();
    return row ? { verified: row.verifiedAt !== null, sentAt: row.sentAt } : null;
  }

  async verifyEmail(tokenHash: string, now: number, startingNano: number, dailyNano: number): Promise<Verified | null> {
    // One write transaction: the token's use, the day's count and the credit together, or none.
    return this.db.$client.transaction((): Verified | null => {
      const used = this.db
        .update(emailVerifications)
        .set({ verifiedAt: now })
        .where(and(eq(emailVerifications.tokenHash, tokenHash), isNull(emailVerifications.verifiedAt), gt(emailVerifications.expiresAt, now)))
        .returning({ accountId: emailVerifications.accountId })
        .get();
      if (!used) return null;
      const granted = startingNano > 0 && countRegistrationCredit(this.db, startingNano, dailyNano, now) ? startingNano : 0;
      if (granted > 0) this.ledger.credit(used.accountId, granted, "registration_credit", "starting balance");
      return { accountId: used.accountId, email: this.db.select({ email: accounts.email }).from(accounts).where(eq(accounts.id, used.accountId)).get()!.email, creditedNano: granted };
    }).immediate();
  }

  async renewVerification(accountId: number, next: NewVerification, now: number, sentBefore: number): Promise<boolean> {
    const pending = and(eq(emailVerifications.accountId, accountId), isNull(emailVerifications.verifiedAt), lte(emailVerifications.sentAt, sentBefore));
    return this.db.update(emailVerifications).set({ ...next, sentAt: now }).where(pending).returning({ id: emailVerifications.accountId }).all().length > 0;
  }

  async markLowBalanceNotice(accountId: number, sent: boolean, now: number): Promise<boolean> {
    const from = sent ? isNull(accounts.lowBalanceNotifiedAt) : isNotNull(accounts.lowBalanceNotifiedAt);
    return this.db.update(accounts).set({ lowBalanceNotifiedAt: sent ? now : null }).where(and(eq(accounts.id, accountId), from)).returning({ id: accounts.id }).all().length > 0;
  }

  async close(accountId: number, forfeitNano: number, now = Date.now()): Promise<ClosedAccount> {
    // One write transaction (a savepoint inside an open write batch), whose checks and writes run in
    // one go: the holds are this process's, and no request reserves between the check and the write.
    const closed = this.db.$client.transaction((): ClosedAccount => {
      const row = this.db.select({ email: accounts.email, balanceNano: accounts.balanceNano, closedAt: accounts.closedAt }).from(accounts).where(eq(accounts.id, accountId)).get();
      if (!row) throw noAccount(accountId);
      const refused = closureRefused(accountId, row, this.ledger.holds.account(accountId), forfeitNano);
      if (refused) throw refused;
      if (forfeitNano > 0) this.db.insert(ledgerEntries).values({ accountId, kind: "operator_debit", amountNano: -forfeitNano, note: FORFEIT_NOTE, createdAt: now }).run();
      this.db
        .update(accounts)
        .set({
          balanceNano: sql`${accounts.balanceNano} - ${forfeitNano}`,
          closedAt: now,
          disabledAt: sql`COALESCE(${accounts.disabledAt}, ${now})`,
          email: closedAddress(accountId),
          passwordHash: null,
          lowBalanceNano: null,
          lowBalanceNotifiedAt: null,
        })
        .where(eq(accounts.id, accountId))
        .run();
      this.db.delete(emailVerifications).where(eq(emailVerifications.accountId, accountId)).run();
      return { accountId, email: row.email, forfeitedNano: forfeitNano };
    }).immediate();
    // Written behind the Ledger's back: its copies of this balance and of the keys' account must go.
    changeWatch(this.db.$client).forget();
    return closed;
  }
}
