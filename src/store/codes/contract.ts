import { GatewayError } from "../../core/errors.ts";
import type { codeBatches } from "../schema/sqlite.ts";

// The code_batches and redemption_codes tables' one owner: the redemption codes the operator mints
// (docs/dashboard.md#redemption-codes), kept as SHA-256 hashes, and a code's redemption: the code
// marked and its value credited as one `redemption` ledger entry, in one transaction. The codes'
// text, format and hashing are payments/codes.ts's; tests/payments/codes-contract.test.ts runs both engines.

export type CodeBatch = typeof codeBatches.$inferSelect;

/** A batch with how many of its codes are redeemed. */
export interface BatchUse extends CodeBatch {
  used: number;
}

export interface NewBatch {
  amountNano: number;
  expiresAt: number | null;
  note: string | null;
  /** The admin account that minted it in the dashboard; null for the operator's CLI. */
  createdByAccountId: number | null;
}

/** What a redeemed code credited: one ledger entry of kind redemption. */
export interface Redeemed {
  batchId: number;
  amountNano: number;
}

/**
 * The claim of an invited registration (`[dashboard] registration = "invite"`): run by
 * AccountStore.create inside the new account's transaction (`tx`: PostgreSQL's; SQLite's is the
 * connection's open one, and the claim answers at once). Marks the code redeemed by the account and
 * answers the credit to write, or throws code_invalid / code_expired, which rolls the account back.
 */
export type InviteClaim = (accountId: number, tx?: unknown) => Claim | Promise<Claim>;

/** The opening credit a claim asks for, as the ledger writes it. */
export interface Claim {
  amountNano: number;
  note: string;
  externalRef: string;
}

export interface CodeStore {
  /** A batch and its codes (`hashes`, one per code), all or none. */
  createBatch(batch: NewBatch, hashes: string[], now?: number): Promise<CodeBatch>;
  /** The newest batches first, with their use. */
  batches(limit?: number): Promise<BatchUse[]>;
  /** Redeems the code of `hash` for the account, at most once whoever asks at the same time; refused with code_invalid or code_expired. */
  redeem(hash: string, accountId: number, now?: number): Promise<Redeemed>;
  /** The claim an invited registration hands to AccountStore.create. */
  inviteClaim(hash: string, now?: number): InviteClaim;
}

/** The ledger entry's note and reference: the reference, unique in the ledger, is a second guard against a code credited twice. */
export const redemptionEntry = (hash: string, batchId: number, amountNano: number): Claim => ({
  amountNano,
  note: `redemption code, batch ${batchId}`,
  externalRef: `code:${hash}`,
});

// One answer for a code never minted and one redeemed already: a guess learns nothing from it.
export const codeInvalid = () => new GatewayError("code_invalid", "This code is not valid: it does not exist or has been redeemed already.");
export const codeExpired = (at: number) => new GatewayError("code_expired", `This code expired on ${new Date(at).toISOString()}; ask the operator for a new one.`);

/**
 * Why a code of `hash` that the claim's UPDATE did not take was refused: expired when its batch
 * says so and it is unused, else the same answer as unknown.
 */
export function refusalOf(found: { redeemedAt: number | null; expiresAt: number | null } | undefined, now: number): GatewayError {
  if (found && found.redeemedAt === null && found.expiresAt !== null && found.expiresAt <= now) return codeExpired(found.expiresAt);
  return codeInvalid();
}
