import type { Statement } from "bun:sqlite";
import { and, eq, isNull, sql } from "drizzle-orm";
import { changeWatch, type ChangeWatch } from "../engine/sqlite/change-watch.ts";
import type { Db } from "../engine/sqlite/client.ts";
import { apiKeys } from "../schema/sqlite.ts";
import { checkKey, hashKey, KEY_PREFIX, type ClientOf, type KeyRecord, type KeyRow, type KeyStore, type NewKey } from "./contract.ts";
import { activeCount, findText, generateKey, keyLimitError, keyPatchValues, keyRecord, LOOKUP_COLUMNS, newKeyValues, notRevokedOf, prefixMatches } from "./rows.ts";

/**
 * Keys on SQLite. The hot path (lookupHash, lookup, known, check) answers at once, from memory until
 * another process commits; the cold paths (the dashboard, the CLI) are promised, as on PostgreSQL.
 */
export class Keys implements KeyStore {
  private readonly byHash: Statement;
  private readonly watch: ChangeWatch;
  // Keys looked up since another process last committed (engine/sqlite/change-watch.ts), by hash; only keys
  // that exist are kept, so presenting made-up keys cannot grow it.
  private readonly records = new Map<string, KeyRecord>();

  constructor(private readonly db: Db) {
    this.byHash = db.$client.prepare(`SELECT ${LOOKUP_COLUMNS} FROM api_keys WHERE key_hash = ?`);
    this.watch = changeWatch(db.$client);
    this.watch.onChange(() => this.records.clear());
  }

  async create(accountId: number, opts: NewKey = {}, maxKeys?: number): Promise<{ key: string; record: KeyRecord }> {
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

  async update(id: number, patch: NewKey): Promise<boolean> {
    const set = keyPatchValues(patch);
    const where = eq(apiKeys.id, id);
    const found = Object.keys(set).length
      ? this.db.update(apiKeys).set(set).where(where).returning({ id: apiKeys.id }).all()
      : this.db.select({ id: apiKeys.id }).from(apiKeys).where(where).all();
    // This connection's own write: data_version does not move for it.
    this.watch.forget();
    return found.length > 0;
  }

  async revoke(id: number, now = Date.now()): Promise<boolean | null> {
    const changed = this.db
      .update(apiKeys)
      .set({ revokedAt: now })
      .where(and(eq(apiKeys.id, id), isNull(apiKeys.revokedAt)))
      .returning({ id: apiKeys.id })
      .all();
    this.watch.forget();
    if (changed.length) return true;
    return (await this.row(id)) ? false : null;
  }

  async row(id: number): Promise<KeyRow | null> {
    return this.db.select().from(apiKeys).where(eq(apiKeys.id, id)).get() ?? null;
  }

  async ofAccount(accountId: number): Promise<KeyRow[]> {
    return this.db.select().from(apiKeys).where(eq(apiKeys.accountId, accountId)).orderBy(apiKeys.id).all();
  }

  async find(text: string): Promise<KeyRow[]> {
    const t = findText(text);
    if (t.whole) return this.db.select().from(apiKeys).where(eq(apiKeys.keyHash, hashKey(t.text))).all();
    return this.db.select().from(apiKeys).where(prefixMatches(apiKeys.prefix, t.text)).orderBy(apiKeys.id).all();
  }

  async countsByAccount(now = Date.now()): Promise<Map<number, { keys: number; active: number }>> {
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

  known(presented: string | null): KeyRecord | null {
    return this.lookup(presented);
  }

  check(presented: string | null, rec: KeyRecord | null, client: ClientOf, now?: number): KeyRecord {
    return checkKey(presented, rec, client, now);
  }
}

