import { asc, eq, sql } from "drizzle-orm";
import { changeWatch } from "../db/change-watch.ts";
import type { Db } from "../db/client.ts";
import { accounts, apiKeys } from "../db/schema.ts";
import { GatewayError } from "../core/errors.ts";
import type { CreditKind, Ledger } from "./ledger.ts";
import { formatUsd } from "../core/money.ts";

export const STARTING_BALANCE_NANO = 1_000_000_000; // spec: registration credits 1 USD

export interface Account {
  id: number;
  email: string;
  balanceNano: number;
  /** Set while the account is disabled: its keys are refused with 403 inactive. */
  disabledAt: number | null;
  createdAt: number;
}

const EMAIL = /^[^\s@]+@[^\s@]+$/;

const ACCOUNT = { id: accounts.id, email: accounts.email, balanceNano: accounts.balanceNano, disabledAt: accounts.disabledAt, createdAt: accounts.createdAt };

export function findAccount(db: Db, email: string): Account | null {
  return db.select(ACCOUNT).from(accounts).where(eq(accounts.email, email.trim().toLowerCase())).get() ?? null;
}

/** A new account; its opening balance is a ledger row like every other balance change. */
export function createAccount(
  db: Db,
  ledger: Ledger,
  email: string,
  opts: { balanceNano?: number; passwordHash?: string | null; kind?: CreditKind } = {},
): Account {
  const normalized = email.trim().toLowerCase();
  if (!EMAIL.test(normalized)) throw new GatewayError("invalid_request", `not an email address: ${email}`);
  if (findAccount(db, normalized)) throw new GatewayError("invalid_request", `an account with email ${normalized} already exists`);
  const row = db.$client
    .prepare("INSERT INTO accounts (email, password_hash, created_at) VALUES (?, ?, ?) RETURNING id")
    .get(normalized, opts.passwordHash ?? null, Date.now()) as { id: number };
  const opening = opts.balanceNano ?? STARTING_BALANCE_NANO;
  if (opening > 0) ledger.credit(row.id, opening, opts.kind ?? "registration_credit", "starting balance");
  return findAccount(db, normalized)!;
}

export function countAccounts(db: Db): number {
  return (db.$client.query("SELECT count(*) AS n FROM accounts").get() as { n: number }).n;
}

export interface AccountSummary extends Account {
  /** Keys neither revoked nor expired. */
  activeKeys: number;
  keys: number;
}

/** Every account with its key counts, oldest first. Holds of running requests are not in the file (ledger/holds.ts). */
export function listAccounts(db: Db, now = Date.now()): AccountSummary[] {
  const active = sql<number>`count(CASE WHEN ${apiKeys.id} IS NOT NULL AND ${apiKeys.revokedAt} IS NULL AND (${apiKeys.expiresAt} IS NULL OR ${apiKeys.expiresAt} > ${now}) THEN 1 END)`;
  return db
    .select({ ...ACCOUNT, keys: sql<number>`count(${apiKeys.id})`, activeKeys: active })
    .from(accounts)
    .leftJoin(apiKeys, eq(apiKeys.accountId, accounts.id))
    .groupBy(accounts.id)
    .orderBy(asc(accounts.id))
    .all();
}

/**
 * A correcting entry (`operator_debit`): takes money back with a note saying why. Never takes the
 * balance below zero, checked inside the write transaction so that a charge committed meanwhile
 * counts; running requests' holds are the server's, and a settle is capped at the balance anyway.
 */
export function debitAccount(db: Db, accountId: number, amountNano: number, note: string): number {
  if (!Number.isSafeInteger(amountNano) || amountNano <= 0) throw new RangeError("a debit must be a positive whole number of nano-dollars");
  const client = db.$client;
  const balance = client.transaction(() => {
    const row = client.query("SELECT balance_nano FROM accounts WHERE id = ?").get(accountId) as { balance_nano: number } | null;
    if (!row) throw new GatewayError("invalid_request", `no account with id ${accountId}`);
    if (row.balance_nano < amountNano) {
      throw new GatewayError(
        "invalid_request",
        `a debit of ${formatUsd(amountNano)} USD would take the balance of ${formatUsd(row.balance_nano)} USD below zero`,
      );
    }
    client
      .prepare("INSERT INTO ledger_entries (account_id, kind, amount_nano, note, created_at) VALUES (?, 'operator_debit', ?, ?, ?)")
      .run(accountId, -amountNano, note, Date.now());
    client.prepare("UPDATE accounts SET balance_nano = balance_nano - ? WHERE id = ?").run(amountNano, accountId);
    return row.balance_nano - amountNano;
  }).immediate();
  // Written behind the Ledger's back: its copy of this balance must go.
  changeWatch(client).forget();
  return balance;
}

/** Disables (refusing its keys) or enables an account; false when it already was so. */
export function setAccountDisabled(db: Db, accountId: number, disabled: boolean, now = Date.now()): boolean {
  const changed = db
    .update(accounts)
    .set({ disabledAt: disabled ? now : null })
    .where(sql`${accounts.id} = ${accountId} AND ${accounts.disabledAt} IS ${disabled ? sql`NULL` : sql`NOT NULL`}`)
    .returning({ id: accounts.id })
    .all();
  changeWatch(db.$client).forget();
  return changed.length > 0;
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
  if (nano !== null && !(Number.isSafeInteger(nano) && nano >= 0)) throw new RangeError("a threshold is a whole, non-negative number of nano-dollars");
  db.update(accounts).set({ lowBalanceNano: nano }).where(eq(accounts.id, accountId)).run();
}
