import { randomBytes } from "node:crypto";
import { or, sql, type SQL, type SQLWrapper } from "drizzle-orm";
import { GatewayError } from "../../core/errors.ts";
import { parseCidrList, storedCidrList } from "../../core/ip.ts";
import { isBudgetPeriod } from "../../ledger/budget.ts";
import { hashKey, KEY_PREFIX, storedBudget, type KeyBudget, type KeyRecord, type NewKey } from "./contract.ts";


// What both engines' key stores share: the stored form of a key, and the SQL both read alike.

/** How much of a key its stored prefix keeps: gk_sk_ and 6 characters. */
const PREFIX_LENGTH = KEY_PREFIX.length + 6;
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** What the database must never hold, whoever writes the key (tests and the first start pass NewKey directly). */
function assertStorable(opts: NewKey): void {
  if (opts.ipAllow) parseCidrList(opts.ipAllow); // refuse a bad CIDR before writing anything
  if (opts.rpm != null && !(Number.isInteger(opts.rpm) && opts.rpm >= 1)) throw new RangeError(`rpm must be a whole number of at least 1, not ${opts.rpm}`);
  if (opts.quotaNano != null && !(Number.isSafeInteger(opts.quotaNano) && opts.quotaNano >= 0)) {
    throw new RangeError(`a quota must be a whole, non-negative number of nano-dollars, not ${opts.quotaNano}`);
  }
  const b = opts.budget;
  if (b != null && !(Number.isSafeInteger(b.nano) && b.nano >= 0 && isBudgetPeriod(b.period))) {
    throw new RangeError(`a budget is a whole, non-negative number of nano-dollars per day, week or month, not ${b.nano} per ${b.period}`);
  }
}

/** The budget's two columns. */
const budgetValues = (b: KeyBudget | null | undefined) => ({ budgetNano: b?.nano ?? null, budgetPeriod: b?.period ?? null });

export function generateKey(): string {
  // 40 characters of base62 ≈ 238 bits; rejection sampling keeps the alphabet uniform.
  let out = KEY_PREFIX;
  while (out.length < KEY_PREFIX.length + 40) {
    for (const b of randomBytes(48)) {
      if (b < 248 && out.length < KEY_PREFIX.length + 40) out += ALPHABET[b % 62];
    }
  }
  return out;
}

/** The stored form of a new key's row, for either schema (the caller adds what only its schema has). */
export function newKeyValues(accountId: number, key: string, opts: NewKey) {
  assertStorable(opts);
  return {
    accountId,
    name: opts.name ?? "",
    prefix: key.slice(0, PREFIX_LENGTH),
    keyHash: hashKey(key),
    quotaNano: opts.quotaNano ?? null,
    ...budgetValues(opts.budget),
    models: opts.models ? JSON.stringify(opts.models) : null,
    ipAllow: opts.ipAllow ? JSON.stringify(opts.ipAllow) : null,
    rpm: opts.rpm ?? null,
    expiresAt: opts.expiresAt ?? null,
    createdAt: Date.now(),
  };
}

/** The columns a patch changes, in the stored form; empty when it changes none. */
export function keyPatchValues(
  patch: NewKey,
): Partial<Omit<ReturnType<typeof newKeyValues>, "accountId" | "prefix" | "keyHash" | "createdAt"> & { budgetReachedAt: null }> {
  assertStorable(patch);
  const set: ReturnType<typeof keyPatchValues> = {};
  if (patch.name !== undefined) set.name = patch.name;
  if (patch.quotaNano !== undefined) set.quotaNano = patch.quotaNano;
  // A changed budget ends its "budget reached" notice (the ledger's column, written with the budget
  // it is about); the period's spend stays counted: a raised budget is not a fresh one.
  if (patch.budget !== undefined) Object.assign(set, budgetValues(patch.budget), { budgetReachedAt: null });
  if (patch.models !== undefined) set.models = patch.models && JSON.stringify(patch.models);
  if (patch.ipAllow !== undefined) set.ipAllow = patch.ipAllow && JSON.stringify(patch.ipAllow);
  if (patch.rpm !== undefined) set.rpm = patch.rpm;
  if (patch.expiresAt !== undefined) set.expiresAt = patch.expiresAt;
  return set;
}

/** The keys of an account that count against `[dashboard] max_keys_per_account`, in either schema's table. */
export const notRevokedOf = (t: { accountId: SQLWrapper; revokedAt: SQLWrapper }, accountId: number): SQL =>
  sql`${t.accountId} = ${accountId} AND ${t.revokedAt} IS NULL`;

/**
 * The refusal past `[dashboard] max_keys_per_account`. Expired keys count with active ones: a holder
 * can give an expired key a new expiry, so it is still one of theirs; a revoked key is gone for good.
 */
export function keyLimitError(maxKeys: number): GatewayError {
  return new GatewayError(
    "key_limit",
    maxKeys === 0
      ? "Keys are not made in the dashboard on this gateway; ask its operator for one."
      : `This account already has ${maxKeys} ${maxKeys === 1 ? "key that is" : "keys that are"} not revoked, the most it may have. Revoke a key it no longer uses to make another.`,
  );
}

/** The presented text as find reads it: the key's form, and whether it is whole (then its hash is looked for). */
export function findText(text: string): { text: string; whole: boolean } {
  const t = text.startsWith(KEY_PREFIX) ? text : KEY_PREFIX + text;
  return { text: t, whole: t.length >= KEY_PREFIX.length + 32 };
}

/**
 * The stored prefix is 6 characters after gk_sk_: a longer text matches it by its start, a shorter
 * one is its start. Plain SQL both engines read alike.
 */
export const prefixMatches = (prefix: SQLWrapper, t: string): SQL =>
  or(sql`substr(${prefix}, 1, length(CAST(${t} AS TEXT))) = ${t}`, sql`substr(CAST(${t} AS TEXT), 1, length(${prefix})) = ${prefix}`)!;

/** Counts a key that is neither revoked nor expired at `now`. */
export const activeCount = (revokedAt: SQLWrapper, expiresAt: SQLWrapper, now: number): SQL =>
  sql`count(CASE WHEN ${revokedAt} IS NULL AND (${expiresAt} IS NULL OR ${expiresAt} > ${now}) THEN 1 END)`;

// The account's switch rides along, so a disabled account costs the hot path nothing extra.
export const LOOKUP_COLUMNS = `id, account_id, name, prefix, quota_nano, budget_nano, budget_period, models, ip_allow, rpm, expires_at, revoked_at,
  (SELECT disabled_at FROM accounts WHERE accounts.id = api_keys.account_id) AS account_disabled_at`;

const orNull = (v: unknown): number | null => (v == null ? null : Number(v));

/** A lookup's row as the hot path reads it; numbers read as text (PostgreSQL's bigint) become numbers. Frozen: shared by every request with this key. */
export function keyRecord(r: Record<string, unknown>): KeyRecord {
  return Object.freeze({
    id: Number(r.id),
    accountId: Number(r.account_id),
    name: r.name as string,
    prefix: r.prefix as string,
    quotaNano: orNull(r.quota_nano),
    budget: storedBudget(r.budget_nano, r.budget_period),
    models: r.models ? (JSON.parse(r.models as string) as string[]) : null,
    ipAllow: r.ip_allow ? storedCidrList(JSON.parse(r.ip_allow as string) as string[]) : null,
    rpm: orNull(r.rpm),
    expiresAt: orNull(r.expires_at),
    revokedAt: orNull(r.revoked_at),
    accountDisabledAt: orNull(r.account_disabled_at),
  });
}
