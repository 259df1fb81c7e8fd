import { and, asc, count, desc, eq, gte, isNotNull, isNull, lt, lte, max, or, sql, type SQL } from "drizzle-orm";
import { changeWatch } from "../store/engine/sqlite/change-watch.ts";
import type { Db } from "../store/engine/sqlite/client.ts";
import { accounts, ledgerEntries } from "../store/schema/sqlite.ts";
import { countRegistrationCredit } from "../store/settings/sqlite.ts";
import { GatewayError } from "../core/errors.ts";
import type { CreditKind, Ledger } from "./ledger.ts";
import { formatUsd } from "../core/money.ts";
import type { Awaitable } from "../core/awaitable.ts";

// The accounts' rows and their ledger history, for the CLI and first start: cold paths, through the
// query builder. The per-request money (reserve, charge, credit) is ledger.ts's.

export const STARTING_BALANCE_NANO = 1_000_000_000; // spec: registration credits 1 USD

/** An account as stored, without its password hash; disabledAt is set while its keys are refused (403 inactive). */
export type Account = Omit<typeof accounts.$inferSelect, "passwordHash">;

export type LedgerEntry = typeof ledgerEntries.$inferSelect;

const EMAIL = /^[^\s@]+@[^\s@]+$/;

export interface NewAccount {
  balanceNano?: number;
  passwordHash?: string | null;
  kind?: CreditKind;
  admin?: boolean;
  /**
   * A registration's: the opening balance counts against the registrations' credits of the UTC day,
   * at most this many nano-dollars on every instance together; past it the account opens at 0.
   * Accounts the operator creates leave it out and are not counted.
   */
  dailyLimitNano?: number;
}

/**
 * The accounts' rows and their ledger history, whichever database holds them: `Accounts` on SQLite
 * (the functions below, plain values), `PgAccounts` on PostgreSQL (pg-accounts.ts, promises).
 * tests/ledger/accounts-contract.test.ts holds both to the same results.
 */
export interface AccountStore {
  find(email: string): Awaitable<Account | null>;
  findById(id: number): Awaitable<Account | null>;
  /** A new account, its opening balance credited through the ledger. */
  create(email: string, opts?: NewAccount): Awaitable<Account>;
  count(): Awaitable<number>;
  list(): Awaitable<Account[]>;
  recentEntries(accountId: number, limit: number): Awaitable<LedgerEntry[]>;
  /** An operator_debit; the balance after it. */
  debit(accountId: number, amountNano: number, note: string): Awaitable<number>;
  setDisabled(accountId: number, disabled: boolean, now?: number): Awaitable<boolean>;
  setAdmin(accountId: number, admin: boolean): Awaitable<boolean>;
  chargedSince(accountIds: number[], since: number): Awaitable<Map<number, number>>;
  findLogin(email: string): Awaitable<AccountLogin | null>;
  loginOf(accountId: number): Awaitable<AccountLogin | null>;
  profileOf(accountId: number): Awaitable<AccountProfile | null>;
  setPasswordHash(accountId: number, hash: string): Awaitable<void>;
  setLowBalanceThreshold(accountId: number, nano: number | null): Awaitable<void>;
  statementPage(accountId: number, upTo: number, before: StatementPosition | null, limit: number): Awaitable<StatementItem[]>;
  newestLedgerId(): Awaitable<number>;
}

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
  debit = (accountId: number, amountNano: number, note: string) => debitAccount(this.db, accountId, amountNano, note);
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
}

/** The email as stored (trimmed, lower case); refuses what is not an address. */
export function normalizedEmail(email: string): string {
  const normalized = email.trim().toLowerCase();
  if (!EMAIL.test(normalized)) throw new GatewayError("invalid_request", `not an email address: ${email}`);
  return normalized;
}

export const accountExists = (email: string) => new GatewayError("invalid_request", `an account with email ${email} already exists`);

export function checkDebitAmount(amountNano: number): void {
  if (!Number.isSafeInteger(amountNano) || amountNano <= 0) throw new RangeError("a debit must be a positive whole number of nano-dollars");
}

export const noAccount = (accountId: number) => new GatewayError("invalid_request", `no account with id ${accountId}`);

export function checkThreshold(nano: number | null): void {
  if (nano !== null && !(Number.isSafeInteger(nano) && nano >= 0)) throw new RangeError("a threshold is a whole, non-negative number of nano-dollars");
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
    let opening = opts.balanceNano ?? STARTING_BALANCE_NANO;
    if (opening > 0 && opts.dailyLimitNano !== undefined && !countRegistrationCredit(db, opening, opts.dailyLimitNano, now)) opening = 0;
    if (opening > 0) ledger.credit(row.id, opening, opts.kind ?? "registration_credit", "starting balance");
    return findAccount(db, normalized)!;
  }).immediate();
}

export function countAccounts(db: Db): number {
  return db.select({ n: count() }).from(accounts).get()!.n;
}

/** Every account, oldest first. Holds of running requests are not in the file (ledger/holds.ts). */
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
 * counts; running requests' holds are the server's, and a settle is capped at the balance anyway.
 */
export function debitAccount(db: Db, accountId: number, amountNano: number, note: string): number {
  checkDebitAmount(amountNano);
  // Immediate: the write lock is taken at BEGIN, so the balance read is the one the debit changes.
  const balance = db.transaction(
    (tx) => {
      const row = tx.select({ balanceNano: accounts.balanceNano }).from(accounts).where(eq(accounts.id, accountId)).get();
      if (!row) throw noAccount(accountId);
      if (row.balanceNano < amountNano) throw debitRefused(amountNano, row.balanceNano, 0);
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
export function debitRefused(amountNano: number, balanceNano: number, heldNano: number): GatewayError {
  const floor = heldNano > 0 ? `the ${formatUsd(heldNano)} USD held by running requests` : "zero";
  return new GatewayError("invalid_request", `a debit of ${formatUsd(amountNano)} USD would take the balance of ${formatUsd(balanceNano)} USD below ${floor}`);
}

/** Disables (refusing its keys) or enables an account; false when it already was so. */
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

export interface AccountLogin {
  id: number;
  passwordHash: string | null;
  disabledAt: number | null;
}

export interface AccountProfile extends Account {
  admin: boolean;
  lowBalanceNano: number | null;
}

const LOGIN = { id: accounts.id, passwordHash: accounts.passwordHash, disabledAt: accounts.disabledAt };

export function findLogin(db: Db, email: string): AccountLogin | null {
  return db.select(LOGIN).from(accounts).where(eq(accounts.email, email.trim().toLowerCase())).get() ?? null;
}

export function loginOf(db: Db, accountId: number): AccountLogin | null {
  return db.select(LOGIN).from(accounts).where(eq(accounts.id, accountId)).get() ?? null;
}

export function profileOf(db: Db, accountId: number): AccountProfile | null {
  return db.select({ ...ACCOUNT, admin: accounts.admin, lowBalanceNano: accounts.lowBalanceNano }).from(accounts).where(eq(accounts.id, accountId)).get() ?? null;
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

export const DAY_MS = 24 * 3600 * 1000;

/** A place in the statement's order, newest first by (created_at, id); a day's charges sit at their latest. */
export interface StatementPosition {
  createdAt: number;
  id: number;
}

export type StatementItem =
  | { kind: CreditKind | "operator_debit"; amountNano: number; note: string | null; externalRef: string | null; createdAt: number; at: StatementPosition }
  | { kind: "charges"; day: string; amountNano: number; count: number; createdAt: number; at: StatementPosition };

/**
 * One page of the statement: the `limit` items after `before`, among the entries up to `upTo` (the
 * newest ledger id when the first page was read: rows are append-only and ids grow, so later pages
 * see the same list while charges keep coming, and a day's group never changes between pages).
 * Credits are read along ledger_account_time; each day's charges are found by stepping back along the
 * same index one day at a time, so a page costs its days, not the account's history.
 */
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
export function newestFirst(items: StatementItem[], limit: number): StatementItem[] {
  items.sort((a, b) => (isEarlier(a.at, b.at) ? 1 : -1));
  return items.slice(0, limit);
}

export const isEarlier = (a: StatementPosition, b: StatementPosition) => a.createdAt < b.createdAt || (a.createdAt === b.createdAt && a.id < b.id);

/** The UTC day (YYYY-MM-DD) of a day's start in unix ms. */
export const dayOf = (start: number) => new Date(start).toISOString().slice(0, 10);

/** The newest ledger id of the whole file: where a statement's first page pins its list. */
export function newestLedgerId(db: Db): number {
  return db.select({ id: max(ledgerEntries.id) }).from(ledgerEntries).get()?.id ?? 0;
}
