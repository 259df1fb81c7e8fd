import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { PgSessions } from "../../src/store/sessions/postgres.ts";
import type { SessionStore } from "../../src/store/sessions/contract.ts";
import { Sessions } from "../../src/store/sessions/sqlite.ts";
import { accountStore, ENGINES, stopEngines, type Opened } from "../support/ledger-engines.ts";

// One SessionStore, two implementations (auth/sessions.ts on SQLite, auth/pg-sessions.ts on
// PostgreSQL): every behaviour below holds on both.

setDefaultTimeout(30_000);
const HOUR = 3_600_000;
afterAll(() => stopEngines());

/** A session's row as stored, by id; null when there is none. */
async function row(o: Opened, id: string): Promise<{ last_seen_at: number } | null> {
  if (o.engine === "sqlite") return (o.db.$client.query("SELECT * FROM sessions WHERE id = ?").get(id) as { last_seen_at: number } | null) ?? null;
  const [r] = await o.db.$client`SELECT last_seen_at::text FROM sessions WHERE id = ${id}`;
  return r ? { last_seen_at: Number(r.last_seen_at) } : null;
}

for (const engine of ENGINES) {
  describe(`dashboard sessions on ${engine.name}`, () => {
    let o: Opened;
    let sessions: SessionStore;
    let account: () => Promise<number>;
    let clock = 1_000_000;
    let n = 0;
    beforeAll(async () => {
      o = await engine.open();
      const now = () => clock;
      sessions = o.engine === "sqlite" ? new Sessions(o.db, 24 * HOUR, now) : new PgSessions(o.db, 24 * HOUR, now);
      const accounts = accountStore(o);
      account = async () => (await accounts.create(`s${++n}@test.local`)).id;
    });
    afterAll(() => o.close());

    it("keep only the SHA-256 of the cookie's token, never the token", async () => {
      const { token } = await sessions.open(await account());
      expect(await row(o, token)).toBeNull();
      expect(await row(o, Bun.SHA256.hash(token, "hex"))).not.toBeNull();
    });

    it("are 256-bit random tokens, a new one at every open", async () => {
      const acc = await account();
      const a = (await sessions.open(acc)).token;
      const b = (await sessions.open(acc)).token;
      expect(a).not.toBe(b);
      expect(Buffer.from(a, "base64url").byteLength).toBe(32);
    });

    it("find the account of a live token", async () => {
      const acc = await account();
      const { token } = await sessions.open(acc);
      expect((await sessions.find(token))?.accountId).toBe(acc);
    });

    it("carry the account's disabled switch", async () => {
      const acc = await account();
      const { token } = await sessions.open(acc);
      await accountStore(o).setDisabled(acc, true, 5_000);
      expect((await sessions.find(token))?.accountDisabledAt).toBe(5_000);
    });

    it("find nothing for a token nobody was given", async () => {
      expect(await sessions.find("not-a-token")).toBeNull();
    });

    it("end at their expiry", async () => {
      const { token, expiresAt } = await sessions.open(await account());
      clock = expiresAt - 1;
      expect(await sessions.find(token)).not.toBeNull();
      clock = expiresAt;
      expect(await sessions.find(token)).toBeNull();
    });

    it("end when revoked", async () => {
      const { token } = await sessions.open(await account());
      await sessions.revoke(token);
      expect(await sessions.find(token)).toBeNull();
    });

    it("end all together but the one kept", async () => {
      const acc = await account();
      const [a, b, c] = [await sessions.open(acc), await sessions.open(acc), await sessions.open(acc)];
      const kept = (await sessions.find(b.token))!;
      expect(await sessions.revokeAll(acc, kept.id)).toBe(2);
      expect(await Promise.all([a, b, c].map(async (s) => (await sessions.find(s.token)) !== null))).toEqual([false, true, false]);
    });

    it("of another account stay when one account logs out everywhere", async () => {
      const other = await sessions.open(await account());
      expect(await sessions.revokeAll(await account())).toBe(0);
      expect(await sessions.find(other.token)).not.toBeNull();
    });

    it("write last_seen_at at most once a minute", async () => {
      const { token } = await sessions.open(await account());
      const id = Bun.SHA256.hash(token, "hex");
      const opened = (await row(o, id))!.last_seen_at;
      clock += 30_000;
      await sessions.find(token);
      expect((await row(o, id))!.last_seen_at).toBe(opened);
      clock += 30_000;
      await sessions.find(token);
      expect((await row(o, id))!.last_seen_at).toBe(clock);
    });
  });
}
