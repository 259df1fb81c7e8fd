import type { apiKeys } from "../schema/sqlite.ts";
import { GatewayError } from "../../core/errors.ts";
import { ipAllowed, type Cidr } from "../../core/ip.ts";
import type { BudgetPeriod } from "../../ledger/budget.ts";

// The api_keys table's owner, but for its money columns (spent_nano, the budget's period counter
// period_start / period_spent_nano / budget_reached_at and, on PostgreSQL, held_nano: the ledger's). tests/auth/keys-contract.test.ts holds both engines to the same results.

/** A value now (SQLite) or later (PostgreSQL). */
type Answer<T> = T | Promise<T>;

export const KEY_PREFIX = "gk_sk_";

/** A budget that resets each UTC day, week or month (ledger/budget.ts). */
export interface KeyBudget {
  nano: number;
  period: BudgetPeriod;
}

export interface KeyRecord {
  id: number;
  accountId: number;
  name: string;
  prefix: string;
  quotaNano: number | null;
  budget: KeyBudget | null;
  models: string[] | null;
  ipAllow: Cidr[] | null;
  rpm: number | null;
  expiresAt: number | null;
  revokedAt: number | null;
  /** When the key's account was disabled (`gateway account disable`); null while it is enabled. */
  accountDisabledAt: number | null;
}

/** The budget of a stored row (both columns set, or none). */
export function storedBudget(nano: unknown, period: unknown): KeyBudget | null {
  return nano == null || period == null ? null : { nano: Number(nano), period: period as BudgetPeriod };
}

/** A key's row as stored, for listings (the hash is in it: never print the row whole). */
export type KeyRow = typeof apiKeys.$inferSelect;

export interface NewKey {
  name?: string;
  quotaNano?: number | null;
  budget?: KeyBudget | null;
  models?: string[] | null;
  ipAllow?: string[] | null;
  rpm?: number | null;
  expiresAt?: number | null;
}

// Bun's own SHA-256: a quarter of node:crypto's createHash cost, on every request.
export const hashKey = (key: string): string => Bun.SHA256.hash(key, "hex");

/**
 * The keys as every caller uses them, whichever database holds them. The cold paths (the dashboard,
 * the CLI) are promised on both engines. The lookup runs on every request: on SQLite it answers at
 * once (a prepared statement, then memory), on PostgreSQL it is promised except for a key already
 * cached (docs/architecture.md#what-stays-synchronous-on-sqlite-and-why). Callers await them all.
 */
export interface KeyStore {
  /**
   * A new key. With `maxKeys` (the dashboard's `[dashboard] max_keys_per_account`; the operator's CLI
   * gives none), refused with 409 key_limit when the account already has that many keys not revoked:
   * counted and inserted under one lock, so concurrent creates never pass the cap.
   */
  create(accountId: number, opts?: NewKey, maxKeys?: number): Promise<{ key: string; record: KeyRecord }>;
  /** Changes the restrictions given (undefined: unchanged, null: removed); false when no key has this id. */
  update(id: number, patch: NewKey): Promise<boolean>;
  /** Revokes the key; null when no key has this id, else whether it was active until now. */
  revoke(id: number, now?: number): Promise<boolean | null>;
  /** The row of the key with this id; null when there is none. */
  row(id: number): Promise<KeyRow | null>;
  /** The keys of an account, oldest first. */
  ofAccount(accountId: number): Promise<KeyRow[]>;
  /**
   * Keys whose visible prefix matches the text (gk_sk_ may be left out), or, for a whole key, the one
   * with its hash: which account owns a leaked key.
   */
  find(text: string): Promise<KeyRow[]>;
  /** Per account that has keys: how many, and how many are neither revoked nor expired at `now`. */
  countsByAccount(now?: number): Promise<Map<number, { keys: number; active: number }>>;
  /** The key with this hash; null when no key has it. */
  lookupHash(hash: string): Answer<KeyRecord | null>;
  /** Looks the presented key up; null when none was presented or its form is not ours. */
  lookup(presented: string | null): Answer<KeyRecord | null>;
  /**
   * What this process knows of the presented key without a query: its record, null (none), or
   * undefined while PostgreSQL's first lookup of it is on its way (started here, kept for the retry).
   */
  known(presented: string | null): KeyRecord | null | undefined;
  check(presented: string | null, rec: KeyRecord | null, client: ClientOf, now?: number): KeyRecord;
}

/** Who sent the request, asked only when a key's allow-list needs it: the request's exchange (a method, not a closure made per request). */
export interface ClientOf {
  clientIp(): string | null;
}

/**
 * The refusals of a key already looked up; the address is asked for only when the key has an
 * allow-list. Every unknown or malformed key gets the same 401, so answers never tell which keys exist.
 */
export function checkKey(presented: string | null, rec: KeyRecord | null, client: ClientOf, now?: number): KeyRecord {
  if (!presented) throw new GatewayError("no-key", "Missing API key. Pass it in the x-api-key header or as Authorization: Bearer <key>.");
  if (!rec) throw new GatewayError("no-key", "Invalid API key.");
  if (rec.revokedAt !== null) throw new GatewayError("inactive", "This API key has been revoked.");
  if (rec.accountDisabledAt !== null) throw new GatewayError("inactive", "The account of this API key is disabled by the operator.");
  // The clock is read only for a key that expires: most never do.
  if (rec.expiresAt !== null && rec.expiresAt <= (now ?? Date.now())) throw new GatewayError("expired", "This API key has expired.");
  const clientIp = rec.ipAllow ? client.clientIp() : null;
  if (rec.ipAllow && !(clientIp && ipAllowed(rec.ipAllow, clientIp))) {
    throw new GatewayError("ip", `Requests from ${clientIp ?? "this address"} are not allowed for this API key.`);
  }
  return rec;
}
