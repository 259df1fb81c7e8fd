import type { Statement } from "bun:sqlite";
import { randomBytes } from "node:crypto";
import { changeWatch, type ChangeWatch } from "../db/change-watch.ts";
import type { Db } from "../db/client.ts";
import { GatewayError } from "../errors.ts";
import { parseCidrList, ipAllowed, type Cidr } from "./ip.ts";

export const KEY_PREFIX = "gk_sk_";
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
}

export interface NewKey {
  name?: string;
  quotaNano?: number | null;
  models?: string[] | null;
  ipAllow?: string[] | null;
  rpm?: number | null;
  expiresAt?: number | null;
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

export class Keys {
  private readonly byHash: Statement;
  private readonly watch: ChangeWatch;
  // Keys looked up since another process last committed (db/change-watch.ts), by hash; only keys
  // that exist are kept, so presenting made-up keys cannot grow it.
  private readonly records = new Map<string, KeyRecord>();

  constructor(private readonly db: Db) {
    this.byHash = db.$client.prepare(
      "SELECT id, account_id, name, prefix, quota_nano, models, ip_allow, rpm, expires_at, revoked_at FROM api_keys WHERE key_hash = ?",
    );
    this.watch = changeWatch(db.$client);
    this.watch.onChange(() => this.records.clear());
  }

  create(accountId: number, opts: NewKey = {}): { key: string; record: KeyRecord } {
    const key = generateKey();
    if (opts.ipAllow) parseCidrList(opts.ipAllow); // refuse a bad CIDR before writing anything
    // rpm 0 would refuse every request with Retry-After: Infinity; the config's limits need ≥ 1 too.
    if (opts.rpm != null && !(Number.isInteger(opts.rpm) && opts.rpm >= 1)) throw new RangeError(`rpm must be a whole number of at least 1, not ${opts.rpm}`);
    if (opts.quotaNano != null && !(Number.isSafeInteger(opts.quotaNano) && opts.quotaNano >= 0)) {
      throw new RangeError(`a quota must be a whole, non-negative number of nano-dollars, not ${opts.quotaNano}`);
    }
    const row = this.db.$client
      .prepare(
        "INSERT INTO api_keys (account_id, name, prefix, key_hash, quota_nano, models, ip_allow, rpm, expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
      )
      .get(
        accountId,
        opts.name ?? "",
        key.slice(0, KEY_PREFIX.length + 6),
        hashKey(key),
        opts.quotaNano ?? null,
        opts.models ? JSON.stringify(opts.models) : null,
        opts.ipAllow ? JSON.stringify(opts.ipAllow) : null,
        opts.rpm ?? null,
        opts.expiresAt ?? null,
        Date.now(),
      ) as { id: number };
    return { key, record: this.lookupHash(hashKey(key))! };
  }

  /** The key with this hash; null when no key has it. */
  lookupHash(hash: string): KeyRecord | null {
    this.watch.sync();
    const known = this.records.get(hash);
    if (known) return known;
    const r = this.byHash.get(hash) as Record<string, unknown> | null;
    if (!r) return null;
    const record: KeyRecord = {
      id: r.id as number,
      accountId: r.account_id as number,
      name: r.name as string,
      prefix: r.prefix as string,
      quotaNano: r.quota_nano as number | null,
      models: r.models ? (JSON.parse(r.models as string) as string[]) : null,
      ipAllow: r.ip_allow ? parseCidrList(JSON.parse(r.ip_allow as string) as string[]) : null,
      rpm: r.rpm as number | null,
      expiresAt: r.expires_at as number | null,
      revokedAt: r.revoked_at as number | null,
    };
    // Shared by every request with this key until forgotten.
    this.records.set(hash, Object.freeze(record));
    return record;
  }

  /** Looks the presented key up; null when none was presented or its form is not ours. */
  lookup(presented: string | null): KeyRecord | null {
    return presented?.startsWith(KEY_PREFIX) ? this.lookupHash(hashKey(presented)) : null;
  }

  /**
   * Finds the key of a request and applies its account-independent restrictions.
   * Every unknown or malformed key gets the same 401, so answers never tell which keys exist.
   */
  authenticate(presented: string | null, clientIp: string | null, now = Date.now()): KeyRecord {
    return this.check(presented, this.lookup(presented), () => clientIp, now);
  }

  /** The refusals of authenticate, for a key already looked up; the address is asked for only when the key has an allow-list. */
  check(presented: string | null, rec: KeyRecord | null, clientIpOf: () => string | null, now = Date.now()): KeyRecord {
    if (!presented) throw new GatewayError("no-key", "Missing API key. Pass it in the x-api-key header or as Authorization: Bearer <key>.");
    if (!rec) throw new GatewayError("no-key", "Invalid API key.");
    if (rec.revokedAt !== null) throw new GatewayError("inactive", "This API key has been revoked.");
    if (rec.expiresAt !== null && rec.expiresAt <= now) throw new GatewayError("expired", "This API key has expired.");
    const clientIp = rec.ipAllow ? clientIpOf() : null;
    if (rec.ipAllow && !(clientIp && ipAllowed(rec.ipAllow, clientIp))) {
      throw new GatewayError("ip", `Requests from ${clientIp ?? "this address"} are not allowed for this API key.`);
    }
    return rec;
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
