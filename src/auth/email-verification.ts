import { createHash, randomBytes } from "node:crypto";
import type { NewVerification } from "../store/accounts/contract.ts";

// The tokens of the emailed links (docs/dashboard.md#address-verification, #password-reset,
// #change-of-email): 256 random bits in the link, only their SHA-256 in the database, so that a copy
// of the database verifies, resets and confirms nothing.

export const VERIFY_TTL_MS = 24 * 3600_000;
/** A password reset link works this long: a mailbox read later than that asks for a new one. */
export const RESET_TTL_MS = 3600_000;
/** A change-of-email link works as long as a verification link: the new mailbox may be read later. */
export const EMAIL_CHANGE_TTL_MS = VERIFY_TTL_MS;
/** A holder asks for a new link at most this often (per account and kind of link). */
export const RESEND_INTERVAL_MS = 60_000;

export const hashVerifyToken = (token: string): string => createHash("sha256").update(token).digest("hex");

/** A link's token, and what is stored of it: its hash and when it stops working. */
export function newLinkToken(ttlMs: number, now = Date.now()): { token: string; stored: NewVerification } {
  const token = randomBytes(32).toString("base64url");
  return { token, stored: { tokenHash: hashVerifyToken(token), expiresAt: now + ttlMs } };
}

export const newVerification = (now = Date.now()) => newLinkToken(VERIFY_TTL_MS, now);
