import type { Statement } from "bun:sqlite";
import { randomBytes } from "node:crypto";
import { changeWatch, type ChangeWatch } from "../store/engine/sqlite/change-watch.ts";
import { and, eq, isNull, or, sql, type SQL, type SQLWrapper } from "drizzle-orm";
import type { Db } from "../store/engine/sqlite/client.ts";
import { apiKeys } from "../store/schema/sqlite.ts";
import { GatewayError } from "../core/errors.ts";
import { parseCidrList, ipAllowed, storedCidrList, type Cidr } from "../core/ip.ts";
import type { Awaitable } from "../core/awaitable.ts";

export const KEY_PREFIX = "gk_sk_";
/** How much of a key its stored prefix keeps: gk_sk_ and 6 characters. */
const PREFIX_LENGTH = KEY_PREFIX.length + 6;
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

export interface KeyRecord {
  id: number;
  accountId: number;
  name: string;
  prefix: string;
  quotaNano: number | null;
  models: string[] | null;
  ipAllow: Cidr[] | null;
  rpm: number | null;
  expiresAt: number | null;
  revokedAt: number | null;
  /** When the key's account was disabled (`gateway account disable`); null while it is enabled. */
  accountDisabledAt: number | null;
}

/** A key's row as stored, for listings (the hash is in it: never print the row whole). */
export type KeyRow = typeof apiKeys.$inferSelect;

export interface NewKey {
  name?: string;
  quotaNano?: number | null;
  models?: string[] | null;
  ipAllow?: string[] | null;
  rpm?: number | null;
  expiresAt?: number | null;
}

/** What the database must never hold, whoever writes the key (tests and the first start pass NewKey directly). */
function assertStorable(opts: NewKey): void {
  if (opts.ipAllow) parseCidrList(opts.ipAllow); // refuse a bad CIDR before writing anything
  if (opts.rpm != null && !(Number.isInteger(opts.rpm) && opts.rpm >= 1)) throw new RangeError(`rpm must be a whole number of at least 1, not ${opts.rpm}`);
  if (opts.quotaNano != null && !(Number.isSafeInteger(opts.quotaNano) && opts.quotaNano >= 0)) {
    throw new RangeError(`a quota must be a whole, non-negative number of nano-dollars, not ${opts.quotaNano}`);
  }
}

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

// Bun's own SHA-256: a quarter of node:crypto's createHash cost, on every request.
export const hashKey = (key: string): string => Bun.SHA256.hash(key, "hex");

/**
 * The keys as every caller uses them, whichever database holds them: `Keys` on SQLite answers at
 * once; `PgKeys` (pg-keys.ts) on PostgreSQL promises, except a lookup it has cached.
 * tests/auth/keys-contract.test.ts holds both to the same results.
 */
export interface KeyStore {
  /**
   * A new key. With `maxKeys` (the dashboard's `[dashboard] max_keys_per_account`; the operator's CLI
   * gives none), refused with 409 key_limit when the account already has that many keys not revoked:
   * counted and inserted under one lock, so concurrent creates never pass the cap.
   */
  create(accountId: number, opts?: NewKey, maxKeys?: number): Awaitable<{ key: string; record: KeyRecord }>;
  /** Changes the restrictions given (undefined: unchanged, null: removed); false when no key has this id. */
  update(id: number, patch: NewKey): Awaitable<boolean>;
  /** Revokes the key; null when no key has this id, else whether it was active until now. */
  revoke(id: number, now?: number): Awaitable<boolean | null>;
  /** The row of the key with this id; null when there is none. */
  row(id: number): Awaitable<KeyRow | null>;
  /** The keys of an account, oldest first. */
  ofAccount(accountId: number): Awaitable<KeyRow[]>;
  /**
   * Keys whose visible prefix matches the text (gk_sk_ may be left out), or, for a whole key, the one
   * with its hash: which account owns a leaked key.
   */
  find(text: string): Awaitable<KeyRow[]>;
  /** Per account that has keys: how many, and how many are neither revoked nor expired at `now`. */
  countsByAccount(now?: number): Awaitable<Map<number, { keys: number; active: number }>>;
  /** The key with this hash; null when no key has it. */
  lookupHash(hash: string): Awaitable<KeyRecord | null>;
  /** Looks the presented key up; null when none was presented or its form is not ours. */
  lookup(presented: string | null): Awaitable<KeyRecord | null>;
  check(presented: string | null, rec: KeyRecord | null, clientIpOf: () => string | null, now?: number): KeyRecord;
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
    models: opts.models ? JSON.stringify(opts.models) : null,
    ipAllow: opts.ipAllow ? JSON.stringify(opts.ipAllow) : null,
    rpm: opts.rpm ?? null,
    expiresAt: opts.expiresAt ?? null,
    createdAt: Date.now(),
  };
}

/** The columns a patch changes, in the stored form; empty when it changes none. */
export function keyPatchValues(patch: NewKey): Partial<Omit<ReturnType<typeof newKeyValues>, "accountId" | "prefix" | "keyHash" | "createdAt">> {
  assertStorable(patch);
  const set: ReturnType<typeof keyPatchValues> = {};
  if (patch.name !== undefined) set.name = patch.name;
  if (patch.quotaNano !== undefined) set.quotaNano = patch.quotaNano;
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
export const LOOKUP_COLUMNS = `id, account_id, name, prefix, quota_nano, models, ip_allow, rpm, expires_at, revoked_at,
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
    models: r.models ? (JSON.parse(r.models as string) as string[]) : null,
    ipAllow: r.ip_allow ? storedCidrList(JSON.parse(r.ip_allow as string) as string[]) : null,
    rpm: orNull(r.rpm),
    expiresAt: orNull(r.expires_at),
    revokedAt: orNull(r.revoked_at),
    accountDisabledAt: orNull(r.account_disabled_at),
  });
}

/**
 * The refusals of a key already looked up; the address is asked for only when the key has an
 * allow-list. Every unknown or malformed key gets the same 401, so answers never tell which keys exist.
 */
export function checkKey(presented: string | null, rec: KeyRecord | null, clientIpOf: () => string | null, now = Date.now()): KeyRecord {
  if (!presented) throw new GatewayError("no-key", "Missing API key. Pass it in the x-api-key header or as Authorization: Bearer <key>.");
  if (!rec) throw new GatewayError("no-key", "Invalid API key.");
  if (rec.revokedAt !== null) throw new GatewayError("inactive", "This API key has been revoked.");
  if (rec.accountDisabledAt !== null) throw new GatewayError("inactive", "The account of this API key is disabled by the operator.");
  if (rec.expiresAt !== null && rec.expiresAt <= now) throw new GatewayError("expired", "This API key has expired.");
  const clientIp = rec.ipAllow ? clientIpOf() : null;
  if (rec.ipAllow && !(clientIp && ipAllowed(rec.ipAllow, clientIp))) {
    throw new GatewayError("ip", `Requests from ${clientIp ?? "this address"} are not allowed for this API key.`);
  }
  return rec;
}

/** Keys on SQLite: every answer at once, the hot path's lookup from memory until another process commits. */
export class Keys implements KeyStore {
  private readonly byHash: Statement;
  private readonly watch: ChangeWatch;
  // Keys looked up since another process last committed (db/change-watch.ts), by hash; only keys
  // that exist are kept, so presenting made-up keys cannot grow it.
  private readonly records = new Map<string, KeyRecord>();

  constructor(private readonly db: Db) {
    this.byHash = db.$client.prepare(`SELECT ${LOOKUP_COLUMNS} FROM api_keys WHERE key_hash = ?`);
    this.watch = changeWatch(db.$client);
    this.watch.onChange(() => this.records.clear());
  }

  create(accountId: number, opts: NewKey = {}, maxKeys?: number): { key: string; record: KeyRecord } {
    const key = generateKey();
    const values = newKeyValues(accountId, key, opts);
    if (maxKeys === undefined) this.db.insert(apiKeys).values(values).run();
    else {
      // IMMEDIATE: the count and the insert under the write lock, whichever process writes too.
      this.db.$client
        .transaction(() => {
          const held = this.db.select({ n: sql<number>`count(*)` }).from(apiKeys).where(notRevokedOf(apiKeys, accountId)).get()!.n;
          if (held >= maxKeys) throw keyLimitError(maxKeys);
          this.db.insert(apiKeys).values(values).run();
        })
        .immediate();
    }
    return { key, record: this.lookupHash(hashKey(key))! };
  }

  update(id: number, patch: NewKey): boolean {
    const set = keyPatchValues(patch);
    const where = eq(apiKeys.id, id);
    const found = Object.keys(set).length
      ? this.db.update(apiKeys).set(set).where(where).returning({ id: apiKeys.id }).all()
      : this.db.select({ id: apiKeys.id }).from(apiKeys).where(where).all();
    // This connection's own write: data_version does not move for it.
    this.watch.forget();
    return found.length > 0;
  }

  revoke(id: number, now = Date.now()): boolean | null {
    const changed = this.db
      .update(apiKeys)
      .set({ revokedAt: now })
      .where(and(eq(apiKeys.id, id), isNull(apiKeys.revokedAt)))
      .returning({ id: apiKeys.id })
      .all();
    this.watch.forget();
    if (changed.length) return true;
    return this.row(id) ? false : null;
  }

  row(id: number): KeyRow | null {
    return this.db.select().from(apiKeys).where(eq(apiKeys.id, id)).get() ?? null;
  }

  ofAccount(accountId: number): KeyRow[] {
    return this.db.select().from(apiKeys).where(eq(apiKeys.accountId, accountId)).orderBy(apiKeys.id).all();
  }

  find(text: string): KeyRow[] {
    const t = findText(text);
    if (t.whole) return this.db.select().from(apiKeys).where(eq(apiKeys.keyHash, hashKey(t.text))).all();
    return this.db.select().from(apiKeys).where(prefixMatches(apiKeys.prefix, t.text)).orderBy(apiKeys.id).all();
  }

  countsByAccount(now = Date.now()): Map<number, { keys: number; active: number }> {
    const rows = this.db
      .select({ accountId: apiKeys.accountId, keys: sql<number>`count(*)`, active: activeCount(apiKeys.revokedAt, apiKeys.expiresAt, now).mapWith(Number) })
      .from(apiKeys)
      .groupBy(apiKeys.accountId)
      .all();
    return new Map(rows.map((r) => [r.accountId, { keys: r.keys, active: r.active }]));
  }

  lookupHash(hash: string): KeyRecord | null {
    this.watch.sync();
    const known = this.records.get(hash);
    if (known) return known;
    const r = this.byHash.get(hash) as Record<string, unknown> | null;
    if (!r) return null;
    const record = keyRecord(r);
    this.records.set(hash, record);
    return record;
  }

  lookup(presented: string | null): KeyRecord | null {
    return presented?.startsWith(KEY_PREFIX) ? this.lookupHash(hashKey(presented)) : null;
  }

  check(presented: string | null, rec: KeyRecord | null, clientIpOf: () => string | null, now = Date.now()): KeyRecord {
    return checkKey(presented, rec, clientIpOf, now);
  }
}

/** The key as sent: x-api-key, else Authorization: Bearer. */
export function presentedKey(headers: Headers): string | null {
  const x = headers.get("x-api-key");
  if (x) return x.trim();
  const auth = headers.get("authorization");
  if (auth && /^bearer\s+/i.test(auth)) return auth.replace(/^bearer\s+/i, "").trim() || null;
  return null;
}
