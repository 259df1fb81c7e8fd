import { createHash, randomBytes } from "node:crypto";
import type { NewVerification } from "../store/accounts/contract.ts";

// The verification link's token (docs/dashboard.md#address-verification): 256 random bits in the
// link, only their SHA-256 in the database, so that a copy of the database verifies nobody.

export const VERIFY_TTL_MS = 24 * 3600_000;
/** A holder asks for a new link at most this often. */
export const RESEND_INTERVAL_MS = 60_000;

export const hashVerifyToken = (token: string): string => createHash("sha256").update(token).digest("hex");

export function newVerification(now = Date.now()): { token: string; stored: NewVerification } {
  const token = randomBytes(32).toString("base64url");
  return { token, stored: { tokenHash: hashVerifyToken(token), expiresAt: now + VERIFY_TTL_MS } };
}
