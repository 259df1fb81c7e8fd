import { GatewayError } from "../core/errors.ts";
import { nanoToUsd } from "../core/money.ts";
import { isoTime } from "../core/time.ts";
import { codeInvalid, type BatchUse, type CodeBatch, type CodeStore } from "../store/codes/contract.ts";

// Redemption codes (docs/dashboard.md#redemption-codes): what a code looks like, how it is kept
// (its SHA-256 only) and a batch's rules. The store marks and credits; this file never sees the ledger.

/** Crockford's base 32: digits and capitals without I, L, O, U, so a code read aloud or retyped survives. */
export const CODE_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/** 16 characters of 5 bits: 80 bits, so that guessing at the throttle's pace finds nothing in any lifetime. */
const CODE_CHARS = 16;
const PREFIX = "GW";
export const MAX_BATCH = 10_000;

/** A new code, GW-XXXX-XXXX-XXXX-XXXX, from the system's CSPRNG (256 is a multiple of 32: no bias). */
export function newCode(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(CODE_CHARS));
  const chars = [...bytes].map((b) => CODE_ALPHABET[b & 31]).join("");
  return [PREFIX, ...chars.match(/.{4}/g)!].join("-");
}

/**
 * The SHA-256 (hex) of a code as typed: case, spaces and dashes ignored, and the letters a person
 * takes for digits read as them (O as 0, I and L as 1), as Crockford's decoding does. Null when the
 * text cannot be a code.
 */
export function codeHash(typed: string): string | null {
  let body = typed.toUpperCase().replace(/[\s-]+/g, "");
  if (body.startsWith(PREFIX) && body.length === PREFIX.length + CODE_CHARS) body = body.slice(PREFIX.length);
  body = body.replace(/O/g, "0").replace(/[IL]/g, "1");
  if (body.length !== CODE_CHARS || [...body].some((c) => !CODE_ALPHABET.includes(c))) return null;
  return new Bun.CryptoHasher("sha256").update(body).digest("hex");
}

/** The hash of a typed code, refused as an unknown code would be when it cannot be one. */
export function hashOrRefuse(typed: string): string {
  const hash = codeHash(typed);
  if (hash === null) throw codeInvalid();
  return hash;
}

export interface BatchRequest {
  amountNano: number;
  count: number;
  expiresAt: number | null;
  note: string | null;
  createdByAccountId: number | null;
}

/** Why a batch request is refused (the CLI's UsageError or the API's invalid_request wrap it), or null. */
export function batchProblem(r: BatchRequest, now = Date.now()): string | null {
  if (!(r.amountNano > 0)) return "usd: a code's value must be more than 0";
  if (!Number.isSafeInteger(r.count) || r.count < 1 || r.count > MAX_BATCH) return `count: a whole number from 1 to ${MAX_BATCH}`;
  if (r.expiresAt !== null && r.expiresAt <= now) return `expires: ${new Date(r.expiresAt).toISOString()} is in the past`;
  if (r.note !== null && r.note.length > 500) return "note: at most 500 characters";
  return null;
}

/** Mints a batch: the codes, returned once, and only their hashes stored. */
export async function mintBatch(store: CodeStore, r: BatchRequest): Promise<{ batch: CodeBatch; codes: string[] }> {
  const problem = batchProblem(r);
  if (problem) throw new GatewayError("invalid_request", problem);
  const codes = Array.from({ length: r.count }, newCode);
  const batch = await store.createBatch({ amountNano: r.amountNano, expiresAt: r.expiresAt, note: r.note, createdByAccountId: r.createdByAccountId }, codes.map((c) => codeHash(c)!));
  return { batch, codes };
}

/** A batch as the CLI's --json and the admin API show it; never a code. */
export const batchView = (b: CodeBatch & { used?: number }, now = Date.now()) => ({
  id: b.id,
  usd: nanoToUsd(b.amountNano),
  count: b.count,
  used: b.used ?? 0,
  unused: b.count - (b.used ?? 0),
  note: b.note,
  expires_at: isoTime(b.expiresAt),
  expired: b.expiresAt !== null && b.expiresAt <= now,
  created_by_account_id: b.createdByAccountId,
  created_at: isoTime(b.createdAt),
});

export type { BatchUse };
