import type { Account } from "../accounts/contract.ts";

// The operator's console queries (docs/dashboard.md#admin): the gateway's totals over the request
// log, the account search, and the operator's notes on accounts (account_notes, this owner's table).
// Cold paths, read by the admin page only; async on both engines. They read request_logs and
// accounts without writing them. tests/logs/admin-contract.test.ts runs the same cases on both engines.

/** One slice of the totals: requests, how many failed (status 400 to 599), and what they cost. */
export interface TotalsCell {
  requests: number;
  failed: number;
  costNano: number;
}

/** The request log summed per (model, provider) for a month, with the share of it made today. */
export interface TotalsRow {
  model: string | null;
  /** The route's provider; null for requests refused before a route was picked. */
  provider: string | null;
  month: TotalsCell;
  today: TotalsCell;
}

/** A page of the account search, and how many accounts match in all. */
export interface AccountPage {
  accounts: Account[];
  total: number;
}

export interface AccountNote {
  note: string;
  updatedAt: number;
  /** The admin account that wrote it; null when no admin's session did. */
  updatedBy: number | null;
}

export interface AdminQueries {
  /** The rows made at or after `monthStart`, per (model, provider); `today` counts those at or after `dayStart` (inside the month). */
  totals(monthStart: number, dayStart: number): Promise<TotalsRow[]>;
  /**
   * Accounts whose email contains `text` (case-insensitive; `%` and `_` are plain characters), or
   * whose id is `text` when it is a number; every account for "". Oldest first, `limit` after `offset`.
   */
  searchAccounts(text: string, offset: number, limit: number): Promise<AccountPage>;
  noteOf(accountId: number): Promise<AccountNote | null>;
  /** Writes the note; an empty one removes it. */
  setNote(accountId: number, note: string, by: number | null, now?: number): Promise<void>;
}

/** The search's LIKE pattern: the text's own wildcards escaped with `\`. */
export const containsPattern = (text: string) => `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** The search text as an account id, when it is one. */
export const idOf = (text: string): number | null => (/^\d{1,15}$/.test(text) ? Number(text) : null);
