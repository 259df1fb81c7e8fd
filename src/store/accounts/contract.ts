import { GatewayError } from "../../core/errors.ts";
import type { accounts, ledgerEntries } from "../schema/sqlite.ts";
import type { CreditKind } from "../ledger/contract.ts";
import type { InviteClaim } from "../codes/contract.ts";

// The accounts' rows and their ledger history, for the CLI, the dashboard and first start: cold
// paths. The per-request money (reserve, charge, credit) is store/ledger/'s.

export const STARTING_BALANCE_NANO = 1_000_000_000; // a registration credits 1 USD (docs/api.md#what-it-does)

/** An account as stored, without its password hash; disabledAt is set while its keys are refused (403 inactive). */
export type Account = Omit<typeof accounts.$inferSelect, "passwordHash" | "lowBalanceNotifiedAt">;

export type LedgerEntry = typeof ledgerEntries.$inferSelect;

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
  /**
   * An invited registration's code (`[dashboard] registration = "invite"`): claimed inside the
   * account's transaction, its value the opening balance as one redemption entry (balanceNano,
   * kind and dailyLimitNano are not used). A refused code creates no account.
   */
  invite?: InviteClaim;
  /**
   * A registration under [email]: the account opens at 0 with this address check pending; its
   * starting credit is granted by verifyEmail. Written in the account's own transaction.
   */
  verification?: NewVerification;
}

/** The link's token as stored: its SHA-256, never the token. */
export interface NewVerification {
  tokenHash: string;
  expiresAt: number;
}

/** An account's address check: absent for accounts that never had one (the operator's, or made without [email]). */
export interface VerificationState {
  verified: boolean;
  /** When the newest link was sent (unix ms): what the resend throttle counts from. */
  sentAt: number;
}

export interface Verified {
  accountId: number;
  email: string;
  /** The starting credit granted now: 0 when the day's registration credits are spent. */
  creditedNano: number;
}

/**
 * The accounts' rows and their ledger history, whichever database holds them. Cold paths (the CLI,
 * the dashboard, registration): promised on both engines (docs/architecture.md#what-stays-synchronous-on-sqlite-and-why).
 */
export interface AccountStore {
  find(email: string): Promise<Account | null>;
  findById(id: number): Promise<Account | null>;
  /** A new account, its opening balance credited through the ledger. */
  create(email: string, opts?: NewAccount): Promise<Account>;
  count(): Promise<number>;
  list(): Promise<Account[]>;
  recentEntries(accountId: number, limit: number): Promise<LedgerEntry[]>;
  /** An operator_debit; the balance after it. */
  debit(accountId: number, amountNano: number, note: string): Promise<number>;
  setDisabled(accountId: number, disabled: boolean, now?: number): Promise<boolean>;
  setAdmin(accountId: number, admin: boolean): Promise<boolean>;
  chargedSince(accountIds: number[], since: number): Promise<Map<number, number>>;
  findLogin(email: string): Promise<AccountLogin | null>;
  loginOf(accountId: number): Promise<AccountLogin | null>;
  profileOf(accountId: number): Promise<AccountProfile | null>;
  setPasswordHash(accountId: number, hash: string): Promise<void>;
  /**
   * Changes the account's address (normalized); refused as registration refuses an address another
   * account has, and account_closed for a closed account (its anonymised address is final).
   */
  setEmail(accountId: number, email: string): Promise<void>;
  setLowBalanceThreshold(accountId: number, nano: number | null): Promise<void>;
  statementPage(accountId: number, upTo: number, before: StatementPosition | null, limit: number): Promise<StatementItem[]>;
  newestLedgerId(): Promise<number>;
  verificationOf(accountId: number): Promise<VerificationState | null>;
  /**
   * Uses a verification link: its token not used, not replaced and not expired at `now` marks the
   * address verified and grants `startingNano` as one registration_credit (within the day's
   * `dailyNano`, counted now), in one transaction. Null for any other token: nothing changes.
   */
  verifyEmail(tokenHash: string, now: number, startingNano: number, dailyNano: number): Promise<Verified | null>;
  /** A new link replacing the pending one, when the last was sent at or before `sentBefore`; false otherwise (throttled, verified, none). */
  renewVerification(accountId: number, next: NewVerification, now: number, sentBefore: number): Promise<boolean>;
  /**
   * Remembers that the low-balance notice was sent (`sent`), or forgets it once the balance is back;
   * true only for the call that changed it, so that one of several instances sends each notice.
   */
  markLowBalanceNotice(accountId: number, sent: boolean, now: number): Promise<boolean>;
  /**
   * Closes the account for good (docs/dashboard.md#closing-the-account), in one transaction: refused
   * (nothing changes) when it is closed already, when running requests hold money on it, or when its
   * balance is not `forfeitNano`, the amount its holder agreed to give up. Otherwise that balance
   * becomes one operator_debit entry (the balance is then 0), the row is disabled and marked closed,
   * its address anonymised (closedAddress) and freed, its password and threshold cleared, and its
   * address check deleted. Its ledger entries, request logs, keys and sessions stay (keys and sessions
   * are ended by their own stores).
   */
  close(accountId: number, forfeitNano: number, now?: number): Promise<ClosedAccount>;
}

export interface ClosedAccount {
  accountId: number;
  /** The address the account had: the anonymised row no longer names it. */
  email: string;
  forfeitedNano: number;
}

/** A closed account's address: unique, and no address (it has no @), so no registration can take it. */
export const closedAddress = (accountId: number) => `closed-account-${accountId}`;

/** What any change to a closed account answers, the holder's second close as the operator's credit. */
export const alreadyClosed = (accountId: number) => new GatewayError("account_closed", `Account ${accountId} is closed by its holder: closure is final.`);

/** The note of a closure's forfeit entry (kind operator_debit: the operator's terms keep the money). */
export const FORFEIT_NOTE = "balance forfeited: account closed by its holder";

export interface AccountLogin {
  id: number;
  passwordHash: string | null;
  disabledAt: number | null;
}

export interface AccountProfile extends Account {
  admin: boolean;
  lowBalanceNano: number | null;
  /** When the low-balance notice of the current crossing was sent; null: none since the balance was last above the threshold. */
  lowBalanceNotifiedAt: number | null;
}



export interface StatementPosition {
  createdAt: number;
  id: number;
}

export type StatementItem =
  | { kind: CreditKind | "operator_debit"; amountNano: number; note: string | null; externalRef: string | null; createdAt: number; at: StatementPosition }
  | { kind: "charges"; day: string; amountNano: number; count: number; createdAt: number; at: StatementPosition };
