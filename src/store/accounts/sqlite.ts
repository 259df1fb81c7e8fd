import { and, asc, count, desc, eq, gt, gte, isNotNull, isNull, lt, lte, max, or, sql, type SQL } from "drizzle-orm";
import { changeWatch } from "../engine/sqlite/change-watch.ts";
import type { Db } from "../engine/sqlite/client.ts";
import { accounts, emailVerifications, ledgerEntries } from "../schema/sqlite.ts";
import { countRegistrationCredit } from "../settings/sqlite.ts";
import type { Ledger } from "../ledger/sqlite.ts";
import type { Claim } from "../codes/contract.ts";
import { STARTING_BALANCE_NANO, type Account, type AccountLogin, type AccountProfile, type AccountStore, type LedgerEntry, type NewAccount, type NewVerification, type StatementItem, type StatementPosition, type VerificationState, type Verified } from "./contract.ts";
import { accountExists, checkDebitAmount, checkThreshold, DAY_MS, dayOf, debitRefused, isEarlier, newestFirst, noAccount, normalizedEmail } from "./rules.ts";

// The accounts' rows and their ledger history, for the CLI and first start: cold paths, through the
// query builder. The per-request money (reserve, charge, credit) is ledger.ts's.

/** The accounts on SQLite: the functions of this file, bound to one database and its ledger. */
export class Accounts implements AccountStore {
  constructor(
    private readonly db: Db,
    private readonly ledger: Ledger,
  ) {}
  find = (email: string) => findAccount(this.db, email);
  findById = (id: number) => findAccountById(this.db, id);
  create = (email: string, opts?: NewAccount) => createAccount(this.db, this.ledger, email, opts);
  count = () => countAccounts(this.db);
  list = () => listAccounts(this.db);
  recentEntries = (accountId: number, limit: number) => recentEntries(this.db, accountId, limit);
  // What running requests hold is in this process's ledger (SQLite's holds live in memory): a debit leaves it.
  debit = (accountId: number, amountNano: number, note: string) => debitAccount(this.db, accountId, amountNano, note, this.ledger.holds.account(accountId));
  setDisabled = (accountId: number, disabled: boolean, now?: number) => setAccountDisabled(this.db, accountId, disabled, now);
  setAdmin = (accountId: number, admin: boolean) => setAdmin(this.db, accountId, admin);
  chargedSince = (accountIds: number[], since: number) => chargedSince(this.db, accountIds, since);
  findLogin = (email: string) => findLogin(this.db, email);
  loginOf = (accountId: number) => loginOf(this.db, accountId);
  profileOf = (accountId: number) => profileOf(this.db, accountId);
  setPasswordHash = (accountId: number, hash: string) => setPasswordHash(this.db, accountId, hash);
  setLowBalanceThreshold = (accountId: number, nano: number | null) => setLowBalanceThreshold(this.db, accountId, nano);
  statementPage = (accountId: number, upTo: number, before: StatementPosition | null, limit: number) => statementPage(this.db, accountId, upTo, before, limit);
  newestLedgerId = () => newestLedgerId(this.db);
  verificationOf = (accountId: number) => verificationOf(this.db, accountId);
  verifyEmail = (tokenHash: string, now: number, startingNano: number, dailyNano: number) => verifyEmail(this.db, this.ledger, tokenHash, now, startingNano, dailyNano);
  renewVerification = (accountId: number, next: NewVerification, now: number, sentBefore: number) => renewVerification(this.db, accountId, next, now, sentBefore);
  markLowBalanceNotice = (accountId: number, sent: boolean, now: number) => markLowBalanceNotice(this.db, accountId, sent, now);
}

const ACCOUNT = {
  id: accounts.id,
  email: accounts.email,
  balanceNano: accounts.balanceNano,
  disabledAt: accounts.disabledAt,
  admin: accounts.admin,
  lowBalanceNano: accounts.lowBalanceNano,
  createdAt: accounts.createdAt,
};

export function findAccount(db: Db, email: string): Account | null {
  return db.select(ACCOUNT).from(accounts).where(eq(accounts.email, email.trim().toLowerCase())).get() ?? null;
}

export function findAccountById(db: Db, id: number): Account | null {
  return db.select(ACCOUNT).from(accounts).where(eq(accounts.id, id)).get() ?? null;
}

/** A new account; its opening balance is a ledger row like every other balance change. */
export function createAccount(
  db: Db,
  ledger: Ledger,
  email: string,
  opts: NewAccount = {},
): Account {
  const normalized = normalizedEmail(email);
  // One write transaction (a savepoint inside an open write batch): the day's count, the row and its
  // credit together, or none of them.
  return db.$client.transaction(() => {
    if (findAccount(db, normalized)) throw accountExists(normalized);
    const now = Date.now();
    const row = db
      .insert(accounts)
      .values({ email: normalized, passwordHash: opts.passwordHash ?? null, admin: opts.admin ?? false, createdAt: now })
      .returning({ id: accounts.id })
      .get();
    if (opts.invite) {
      // SQLite's claim answers at once, inside this transaction.
      const claim = opts.invite(row.id) as Claim;
      ledger.credit(row.id, claim.amountNano, "redemption", claim.note, claim.externalRef);
      return findAccount(db, normalized)!;
    }
    let opening = opts.verification ? 0 : (opts.balanceNano ?? STARTING_BALANCE_NANO);
    if (opts.verification) db.insert(emailVerifications).values({ accountId: row.id, ...opts.verification, sentAt: now }).run();
    if (opening > 0 && opts.dailyLimitNano !== undefined && !countRegistrationCredit(db, opening, opts.dailyLimitNano, now)) opening = 0;
    if (opening > 0) ledger.credit(row.id, opening, opts.kind ?? "registration_credit", "starting balance");
    return findAccount(db, normalized)!;
  }).immediate();
}

export function countAccounts(db: Db): number {
  return db.select({ n: count() }).from(accounts).get()!.n;
}

/** Every account, oldest first. Holds of running requests are not in the file (store/ledger/holds.ts). */
export function listAccounts(db: Db): Account[] {
  return db.select(ACCOUNT).from(accounts).orderBy(asc(accounts.id)).all();
}

/** The account's newest ledger entries, newest first. */
export function recentEntries(db: Db, accountId: number, limit: number): LedgerEntry[] {
  return db.select().from(ledgerEntries).where(eq(ledgerEntries.accountId, accountId)).orderBy(desc(ledgerEntries.id)).limit(limit).all();
}

/**
 * A correcting entry (`operator_debit`): takes money back with a note saying why. Never takes the
 * balance below zero, checked inside the write transaction so that a charge committed meanwhile
 * counts; nor below what running requests hold (`heldNano`, the serving process's in-memory holds).
 */
export function debitAccount(db: Db, accountId: number, amountNano: number, note: string, heldNano = 0): number {
  checkDebitAmount(amountNano);
  // Immediate: the write lock is taken at BEGIN, so the balance read is the one the debit changes.
  const balance = db.transaction(
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
  changeWatch(db.$client).forget();
  return balance;
}

/** Why a debit was refused: it would take the balance below zero, or below what running requests hold (PostgreSQL knows every instance's holds). */
export function setAccountDisabled(db: Db, accountId: number, disabled: boolean, now = Date.now()): boolean {
  const changed = db
    .update(accounts)
    .set({ disabledAt: disabled ? now : null })
    .where(and(eq(accounts.id, accountId), disabled ? isNull(accounts.disabledAt) : isNotNull(accounts.disabledAt)))
    .returning({ id: accounts.id })
    .all();
  changeWatch(db.$client).forget();
  return changed.length > 0;
}

/** Marks an account admin (it sees the dashboard's admin page and routes) or not; false when it already was so. */
export function setAdmin(db: Db, accountId: number, admin: boolean): boolean {
  return db.update(accounts).set({ admin }).where(and(eq(accounts.id, accountId), eq(accounts.admin, !admin))).returning({ id: accounts.id }).all().length > 0;
}

/** What each account's charges took from its balance since `since` (unix ms), by account id: one index range each. */
export function chargedSince(db: Db, accountIds: number[], since: number): Map<number, number> {
  const charged = new Map<number, number>();
  for (const accountId of accountIds) {
    const row = db
      .select({ nano: sql<number>`COALESCE(-SUM(${ledgerEntries.amountNano}), 0)` })
      .from(ledgerEntries)
      .where(and(eq(ledgerEntries.accountId, accountId), gte(ledgerEntries.createdAt, since), eq(ledgerEntries.kind, "charge")))
      .get();
    charged.set(accountId, row?.nano ?? 0);
  }
  return charged;
}

// The dashboard's view of an account: what a login checks, what GET /api/me shows.

const LOGIN = { id: accounts.id, passwordHash: accounts.passwordHash, disabledAt: accounts.disabledAt };

export function findLogin(db: Db, email: string): AccountLogin | null {
  return db.select(LOGIN).from(accounts).where(eq(accounts.email, email.trim().toLowerCase())).get() ?? null;
}

export function loginOf(db: Db, accountId: number): AccountLogin | null {
  return db.select(LOGIN).from(accounts).where(eq(accounts.id, accountId)).get() ?? null;
}

export function profileOf(db: Db, accountId: number): AccountProfile | null {
  return db.select({ ...ACCOUNT, lowBalanceNotifiedAt: accounts.lowBalanceNotifiedAt }).from(accounts).where(eq(accounts.id, accountId)).get() ?? null;
}

export function setPasswordHash(db: Db, accountId: number, hash: string): void {
  db.update(accounts).set({ passwordHash: hash }).where(eq(accounts.id, accountId)).run();
}

/** The spendable amount below which the dashboard shows its notice; null: no notice. */
export function setLowBalanceThreshold(db: Db, accountId: number, nano: number | null): void {
  checkThreshold(nano);
  db.update(accounts).set({ lowBalanceNano: nano }).where(eq(accounts.id, accountId)).run();
}

// The account holder's statement (GET /api/ledger): every credit and debit on its own, the charges
// summed per UTC day, newest first, a page at a time.

export function statementPage(db: Db, accountId: number, upTo: number, before: StatementPosition | null, limit: number): StatementItem[] {
  const mine = and(eq(ledgerEntries.accountId, accountId), lte(ledgerEntries.id, upTo));
  const earlier = (p: StatementPosition) =>
    and(lte(ledgerEntries.createdAt, p.createdAt), or(lt(ledgerEntries.createdAt, p.createdAt), lt(ledgerEntries.id, p.id)));
  const newest = [desc(ledgerEntries.createdAt), desc(ledgerEntries.id)];
  const items: StatementItem[] = db
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
    const next: { createdAt: number } | undefined = db.select({ createdAt: ledgerEntries.createdAt }).from(ledgerEntries).where(and(charges, bound)).orderBy(...newest).limit(1).get();
    if (!next) break;
    const start: number = next.createdAt - (((next.createdAt % DAY_MS) + DAY_MS) % DAY_MS);
    dayBefore = start;
    const inDay = and(charges, gte(ledgerEntries.createdAt, start), lt(ledgerEntries.createdAt, start + DAY_MS));
    const latest = db.select({ createdAt: ledgerEntries.createdAt, id: ledgerEntries.id }).from(ledgerEntries).where(inDay).orderBy(...newest).limit(1).get()!;
    // A day whose latest charge is not before the cursor was shown whole on an earlier page.
    if (before && !isEarlier(latest, before)) continue;
    const sum = db.select({ amountNano: sql<number>`SUM(${ledgerEntries.amountNano})`, count: count() }).from(ledgerEntries).where(inDay).get()!;
    items.push({ kind: "charges", day: dayOf(start), amountNano: sum.amountNano, count: sum.count, createdAt: latest.createdAt, at: latest });
    groups++;
  }
  return newestFirst(items, limit);
}

/** The credits and the days' charges of a page merged in the statement's order, cut at the page's length. */
export function newestLedgerId(db: Db): number {
  return db.select({ id: max(ledgerEntries.id) }).from(ledgerEntries).get()?.id ?? 0;
}

// A registration's address check (docs/dashboard.md#address-verification).

export function verificationOf(db: Db, accountId: number): VerificationState | null {
  const row = db.select({ verifiedAt: emailVerifications.verifiedAt, sentAt: emailVerifications.sentAt }).from(emailVerifications).where(eq(emailVerifications.accountId, accountId)).get();
  return row ? { verified: row.verifiedAt !== null, sentAt: row.sentAt } : null;
}

export function verifyEmail(db: Db, ledger: Ledger, tokenHash: string, now: number, startingNano: number, dailyNano: number): Verified | null {
  // One write transaction: the token's use, the day's count and the credit together, or none.
  return db.$client.transaction((): Verified | null => {
    const used = db
      .update(emailVerifications)
      .set({ verifiedAt: now })
      .where(and(eq(emailVerifications.tokenHash, tokenHash), isNull(emailVerifications.verifiedAt), gt(emailVerifications.expiresAt, now)))
      .returning({ accountId: emailVerifications.accountId })
      .get();
    if (!used) return null;
    const granted = startingNano > 0 && countRegistrationCredit(db, startingNano, dailyNano, now) ? startingNano : 0;
    if (granted > 0) ledger.credit(used.accountId, granted, "registration_credit", "starting balance");
    return { accountId: used.accountId, email: findAccountById(db, used.accountId)!.email, creditedNano: granted };
  }).immediate();
}

export function renewVerification(db: Db, accountId: number, next: NewVerification, now: number, sentBefore: number): boolean {
  const pending = and(eq(emailVerifications.accountId, accountId), isNull(emailVerifications.verifiedAt), lte(emailVerifications.sentAt, sentBefore));
  return db.update(emailVerifications).set({ ...next, sentAt: now }).where(pending).returning({ id: emailVerifications.accountId }).all().length > 0;
}

export function markLowBalanceNotice(db: Db, accountId: number, sent: boolean, now: number): boolean {
  const from = sent ? isNull(accounts.lowBalanceNotifiedAt) : isNotNull(accounts.lowBalanceNotifiedAt);
  return db.update(accounts).set({ lowBalanceNotifiedAt: sent ? now : null }).where(and(eq(accounts.id, accountId), from)).returning({ id: accounts.id }).all().length > 0;
}
