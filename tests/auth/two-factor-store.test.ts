import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { PgTwoFactor } from "../../src/store/two-factor/postgres.ts";
import type { TwoFactorStore } from "../../src/store/two-factor/contract.ts";
import { TwoFactor } from "../../src/store/two-factor/sqlite.ts";
import { accountStore, ENGINES, stopEngines, type Opened } from "../support/ledger-engines.ts";

// One TwoFactorStore over both engines (store/two-factor/queries.ts): each "at most once" is one
// conditional write, so that two requests at once (or two instances) never both get the yes.

setDefaultTimeout(30_000);
afterAll(() => stopEngines());

for (const engine of ENGINES) {
  describe(`two-factor rows on ${engine.name}`, () => {
    let o: Opened;
    let store: TwoFactorStore;
    let account: () => Promise<number>;
    let n = 0;
    beforeAll(async () => {
      o = await engine.open();
      store = o.engine === "sqlite" ? new TwoFactor(o.db) : new PgTwoFactor(o.db);
      const accounts = accountStore(o);
      account = async () => (await accounts.create(`f${++n}@test.local`)).id;
    });
    afterAll(() => o.close());

    /** An account with two-factor login on at step 100, and codes "h0".."h9". */
    async function enabled(): Promise<number> {
      const id = await account();
      await store.begin(id, "SECRET", 1);
      expect(await store.enable(id, "SECRET", 100, Array.from({ length: 10 }, (_, i) => `h${id}-${i}`), 2)).toBe(true);
      return id;
    }

    it("a setup while it is on changes nothing; a pending one is replaced", async () => {
      const id = await account();
      expect(await store.begin(id, "FIRST", 1)).toBe(true);
      expect(await store.begin(id, "SECOND", 2)).toBe(true);
      expect(await store.stateOf(id)).toEqual({ secret: "SECOND", enabledAt: null, lastStep: null });
      expect(await store.enable(id, "SECOND", 7, ["x"], 3)).toBe(true);
      expect(await store.begin(id, "THIRD", 4)).toBe(false);
      expect(await store.stateOf(id)).toEqual({ secret: "SECOND", enabledAt: 3, lastStep: 7 });
    });

    it("of two enables of one setup at once, one turns it on", async () => {
      const id = await account();
      await store.begin(id, "S", 1);
      const both = await Promise.all([store.enable(id, "S", 5, [`a${id}`], 2), store.enable(id, "S", 5, [`b${id}`], 2)]);
      expect(both.filter(Boolean)).toHaveLength(1);
      expect(await store.recoveryCodesLeft(id)).toBe(1);
    });

    it("a time step is spent once, and never one at or before the last", async () => {
      const id = await enabled();
      expect(await store.spendStep(id, 100)).toBe(false);
      const both = await Promise.all([store.spendStep(id, 101), store.spendStep(id, 101)]);
      expect(both.filter(Boolean)).toHaveLength(1);
      expect(await store.spendStep(id, 100)).toBe(false);
      expect(await store.spendStep(id, 102)).toBe(true);
    });

    it("a recovery code is spent once, and only by its own account", async () => {
      const id = await enabled();
      const other = await enabled();
      expect(await store.spendRecoveryCode(other, `h${id}-0`, 5)).toBe(false);
      const both = await Promise.all([store.spendRecoveryCode(id, `h${id}-0`, 5), store.spendRecoveryCode(id, `h${id}-0`, 5)]);
      expect(both.filter(Boolean)).toHaveLength(1);
      expect(await store.recoveryCodesLeft(id)).toBe(9);
    });

    it("a login's challenge is used once, and not after it expires", async () => {
      const id = await enabled();
      await store.openChallenge(id, `c${id}`, 1_000, 2_000);
      expect(await store.challengeOf(`c${id}`, 1_500)).toBe(id);
      expect(await store.challengeOf(`c${id}`, 2_000)).toBeNull();
      expect(await store.useChallenge(`c${id}`, 2_000)).toBe(false);
      const both = await Promise.all([store.useChallenge(`c${id}`, 1_500), store.useChallenge(`c${id}`, 1_500)]);
      expect(both.filter(Boolean)).toHaveLength(1);
      expect(await store.challengeOf(`c${id}`, 1_500)).toBeNull();
    });

    it("remove takes the secret, the codes and the waiting logins; enabledAmong says who has it on", async () => {
      const id = await enabled();
      const pending = await account();
      await store.begin(pending, "P", 1);
      await store.openChallenge(id, `r${id}`, 1_000, 9_000);
      expect([...(await store.enabledAmong([id, pending]))]).toEqual([id]);
      expect(await store.remove(id)).toBe(true);
      expect(await store.stateOf(id)).toBeNull();
      expect(await store.recoveryCodesLeft(id)).toBe(0);
      expect(await store.challengeOf(`r${id}`, 2_000)).toBeNull();
      expect(await store.remove(id)).toBe(false);
      expect((await store.enabledAmong([id, pending])).size).toBe(0);
    });
  });
}
