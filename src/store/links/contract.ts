import type { NewVerification } from "../accounts/contract.ts";

// The single-use emailed links other than a registration's verification (docs/dashboard.md#password-reset,
// docs/dashboard.md#change-of-email): one per account and purpose, the newest replacing the last.

export type LinkPurpose = "password_reset" | "email_change";

/** What a live link opens: its account, and for an email change the address it confirms. */
export interface LinkUse {
  accountId: number;
  newEmail: string | null;
}

export interface LinkStore {
  /**
   * Stores a new link for the account, replacing its pending one of the same purpose, unless that one
   * was sent after `sentBefore` (the resend throttle); false then, and nothing changes.
   */
  issue(accountId: number, purpose: LinkPurpose, link: NewVerification & { newEmail?: string | null }, now: number, sentBefore: number): Promise<boolean>;
  /** The account a live link (unused, unreplaced, unexpired at `now`) opens, without using it. */
  peek(tokenHash: string, purpose: LinkPurpose, now: number): Promise<LinkUse | null>;
  /** Uses a live link: of two uses at once, on any instances, one gets it; null for the other and for a dead link. */
  consume(tokenHash: string, purpose: LinkPurpose, now: number): Promise<LinkUse | null>;
  /** Ends the account's pending link of `purpose` (its address changed, so the link went to a stale one). */
  cancel(accountId: number, purpose: LinkPurpose, now: number): Promise<void>;
  /**
   * Ends every pending link of the account: its password changed, and whoever knew the old one may
   * have asked for a reset, or for a change of address to a mailbox of theirs.
   */
  cancelAll(accountId: number, now: number): Promise<void>;
  /** Deletes every link of the account, used or not (its closure: a pending link opens nothing, and a change's new address is personal data). */
  forget(accountId: number): Promise<void>;
}
