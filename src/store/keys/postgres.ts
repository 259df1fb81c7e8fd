import type { SQL } from "bun";
import { and, eq, getTableColumns, isNull, sql } from "drizzle-orm";
import type { PgDb } from "../engine/postgres/client.ts";
import { apiKeys } from "../schema/postgres.ts";
import { activeCount, findText, generateKey, keyLimitError, keyPatchValues, keyRecord, LOOKUP_COLUMNS, newKeyValues, notRevokedOf, prefixMatches } from "./rows.ts";
import { checkKey, hashKey, KEY_PREFIX, type ClientOf, type KeyRecord, type KeyRow, type KeyStore, type NewKey } from "./contract.ts";

// The keys on PostgreSQL (`[database] url`), for several instances sharing one database. The lookup
// runs on every request, so a key once found is kept in memory and answered synchronously; a miss
// costs one query. Another instance's revoke reaches this one through `forget()` (the lead's
// LISTEN/NOTIFY), this instance's own writes forget at once. The money columns (spent_nano,
// held_nano) are the ledger's (store/ledger/): nothing here writes them.

// The row as SQLite's schema has it: held_nano exists only here and is the ledger's.
const { heldNano: _held, ...ROW } = getTableColumns(apiKeys);

export class PgKeys implements KeyStore {
  private readonly sql: SQL;
  private readonly records = new Map<string, KeyRecord>();
  /** Lookups on their way, by hash: concurrent requests with one new key share one query. */
  private readonly pending = new Map<string, Promise<KeyRecord | null>>();
  /** Moves on every forget, so that a query begun before it cannot store what it read after. */
  private generation = 0;

  constructor(private readonly db: PgDb) {
    this.sql = db.$client;
  }

  /** Drops every cached key: the next lookup of each reads the database. */
  forget(): void {
    this.records.clear();
    this.pending.clear();
    this.generation++;
  }

  async create(accountId: number, opts: NewKey = {}, maxKeys?: number): Promise<{ key: string; record: KeyRecord }> {
    const key = generateKey();
    const values = newKeyValues(accountId, key, opts);
    if (maxKeys === undefined) await this.db.insert(apiKeys).values(values);
    else {
      await this.db.transaction(async (tx) => {
        // The account's row, locked first as everywhere (the ledger's lock order): concurrent
        // creates on one account, on any instance, count one after another.
        await tx.execute(sql`SELECT 1 FROM accounts WHERE id = ${accountId} FOR UPDATE`);
        const [held] = await tx.select({ n: sql<number>`count(*)`.mapWith(Number) }).from(apiKeys).where(notRevokedOf(apiKeys, accountId));
        if (held!.n >= maxKeys) throw keyLimitError(maxKeys);
        await tx.insert(apiKeys).values(values);
      });
    }
    this.forget();
    return { key, record: (await this.lookupHash(hashKey(key)))! };
  }

  async update(id: number, patch: NewKey): Promise<boolean> {
    const set = keyPatchValues(patch);
    const where = eq(apiKeys.id, id);
    const found = Object.keys(set).length
      ? await this.db.update(apiKeys).set(set).where(where).returning({ id: apiKeys.id })
      : await this.db.select({ id: apiKeys.id }).from(apiKeys).where(where);
    this.forget();
    return found.length > 0;
  }

  async revoke(id: number, now = Date.now()): Promise<boolean | null> {
    const changed = await this.db
      .update(apiKeys)
      .set({ revokedAt: now })
      .where(and(eq(apiKeys.id, id), isNull(apiKeys.revokedAt)))
      .returning({ id: apiKeys.id });
    this.forget();
    if (changed.length) return true;
    return (await this.row(id)) ? false : null;
  }

  async row(id: number): Promise<KeyRow | null> {
    const [r] = await this.db.select(ROW).from(apiKeys).where(eq(apiKeys.id, id));
    return r ?? null;
  }

  async ofAccount(accountId: number): Promise<KeyRow[]> {
    return await this.db.select(ROW).from(apiKeys).where(eq(apiKeys.accountId, accountId)).orderBy(apiKeys.id);
  }

  async find(text: string): Promise<KeyRow[]> {
    const t = findText(text);
    const where = t.whole ? eq(apiKeys.keyHash, hashKey(t.text)) : prefixMatches(apiKeys.prefix, t.text);
    return await this.db.select(ROW).from(apiKeys).where(where).orderBy(apiKeys.id);
  }

  async countsByAccount(now = Date.now()): Promise<Map<number, { keys: number; active: number }>> {
    const rows = await this.db
      .select({
        accountId: apiKeys.accountId,
        keys: sql<number>`count(*)`.mapWith(Number),
        active: activeCount(apiKeys.revokedAt, apiKeys.expiresAt, now).mapWith(Number),
      })
      .from(apiKeys)
      .groupBy(apiKeys.accountId);
    return new Map(rows.map((r) => [r.accountId, { keys: r.keys, active: r.active }]));
  }

  /** A cached key at once; otherwise one query, whose answer is cached if the key exists (made-up keys cannot grow the cache). */
  lookupHash(hash: string): KeyRecord | null | Promise<KeyRecord | null> {
    const known = this.records.get(hash);
    if (known) return known;
    let p = this.pending.get(hash);
    if (!p) {
      const generation = this.generation;
      const read = this.read(hash).then((record) => {
        if (record && generation === this.generation) this.records.set(hash, record);
        return record;
      });
      p = read.finally(() => {
        if (this.pending.get(hash) === p) this.pending.delete(hash);
      });
      this.pending.set(hash, p);
    }
    return p;
  }

  private async read(hash: string): Promise<KeyRecord | null> {
    const [r] = await this.sql.unsafe(`SELECT ${LOOKUP_COLUMNS} FROM api_keys WHERE key_hash = $1`, [hash]);
    return r ? keyRecord(r) : null;
  }

  lookup(presented: string | null): KeyRecord | null | Promise<KeyRecord | null> {
    return presented?.startsWith(KEY_PREFIX) ? this.lookupHash(hashKey(presented)) : null;
  }

  known(presented: string | null): KeyRecord | null | undefined {
    const found = this.lookup(presented);
    // The branch on the engine's answer stays here, below the routes.
    if (!(found instanceof Promise)) return found;
    found.catch(() => null);
    return undefined;
  }

  check(presented: string | null, rec: KeyRecord | null, client: ClientOf, now?: number): KeyRecord {
    return checkKey(presented, rec, client, now);
  }
}
