import type { Db } from "../db/client.ts";
import { GatewayError } from "../errors.ts";
import type { CreditKind, Ledger } from "./ledger.ts";

export const STARTING_BALANCE_NANO = 1_000_000_000; // spec: registration credits 1 USD

export interface Account {
  id: number;
  email: string;
  balanceNano: number;
  createdAt: number;
}

const EMAIL = /^[^\s@]+@[^\s@]+$/;

export function findAccount(db: Db, email: string): Account | null {
  const r = db.$client.query("SELECT id, email, balance_nano, created_at FROM accounts WHERE email = ?").get(email.toLowerCase()) as
    | { id: number; email: string; balance_nano: number; created_at: number }
    | null;
  return r && { id: r.id, email: r.email, balanceNano: r.balance_nano, createdAt: r.created_at };
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
