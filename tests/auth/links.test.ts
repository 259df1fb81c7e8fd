import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { hashVerifyToken, newLinkToken } from "../../src/auth/email-verification.ts";
import { onPostgres, onSqlite } from "../../src/store/engine/either.ts";
import type { AccountStore } from "../../src/store/accounts/contract.ts";
import type { LinkStore } from "../../src/store/links/contract.ts";
import { LinksOn } from "../../src/store/links/queries.ts";
import { accountStore, ENGINES, stopEngines, type Opened } from "../support/ledger-engines.ts";

// One LinkStore (store/links/queries.ts) on both engines: the emailed reset and change-of-email links
// (docs/dashboard.md#password-reset). A link is used once, even by two uses at once; a newer one
// replaces it; an expired or cancelled one opens nothing. And the address change it leads to.

setDefaultTimeout(30_000);
const HOUR = 3_600_000;
const MINUTE = 60_000;
afterAll(() => stopEngines());

for (const engine of ENGINES) {
  describe(`emailed links on ${engine.name}`, () => {
    let o: Opened;
    let links: LinkStore;
    let accounts: AccountStore;
    let n = 0;
    const account = async () => (await accounts.create(`l${++n}@test.local`)).id;
    /** A new link of `purpose` for the account, issued at `now`: its token. */
    const issue = async (accountId: number, purpose: "password_reset" | "email_change", now: number, newEmail: string | null = null) => {
      const { token, stored } = newLinkToken(HOUR, now);
      expect(await links.issue(accountId, purpose, { ...stored, newEmail }, now, now - MINUTE)).toBe(true);
      return hashVerifyToken(token);
    };
    beforeAll(async () => {
      o = await engine.open();
      links = new LinksOn(o.engine === "sqlite" ? onSqlite(o.db) : onPostgres(o.db));
      accounts = accountStore(o);
    });
    afterAll(() => o.close());

    it("use a link once, even two uses at once", async () => {
      const acc = await account();
      const hash = await issue(acc, "password_reset", 1_000);
      const uses = await Promise.all([links.consume(hash, "password_reset", 2_000), links.consume(hash, "password_reset", 2_000)]);
      expect(uses.filter((u) => u !== null)).toEqual([{ accountId: acc, newEmail: null }]);
      expect(await links.consume(hash, "password_reset", 3_000)).toBeNull();
      expect(await links.peek(hash, "password_reset", 3_000)).toBeNull();
    });

    it("open nothing once expired, nor for the other purpose", async () => {
      const acc = await account();
      const hash = await issue(acc, "password_reset", 1_000);
      expect(await links.consume(hash, "email_change", 2_000)).toBeNull();
      expect(await links.consume(hash, "password_reset", 1_000 + HOUR)).toBeNull();
    });

    it("replace the pending link with a newer one, not within the resend interval", async () => {
      const acc = await account();
      const old = await issue(acc, "email_change", 1_000, "new@test.local");
      const early = newLinkToken(HOUR, 30_000);
      expect(await links.issue(acc, "email_change", early.stored, 30_000, 30_000 - MINUTE)).toBe(false);
      const next = await issue(acc, "email_change", 1_000 + MINUTE, "newer@test.local");
      expect(await links.consume(old, "email_change", 70_000)).toBeNull();
      expect(await links.consume(next, "email_change", 70_000)).toEqual({ accountId: acc, newEmail: "newer@test.local" });
    });

    it("issue a new link at once after the last was used", async () => {
      const acc = await account();
      const used = await issue(acc, "password_reset", 1_000);
      expect(await links.consume(used, "password_reset", 2_000)).not.toBeNull();
      await issue(acc, "password_reset", 3_000);
    });

    it("cancel the pending link of one purpose only", async () => {
      const acc = await account();
      const reset = await issue(acc, "password_reset", 1_000);
      const change = await issue(acc, "email_change", 1_000, "x@test.local");
      await links.cancel(acc, "email_change", 2_000);
      expect(await links.peek(change, "email_change", 2_000)).toBeNull();
      expect(await links.peek(reset, "password_reset", 2_000)).toEqual({ accountId: acc, newEmail: null });
    });

    it("change an account's address, refusing one another account has", async () => {
      const a = await account();
      const b = await account();
      await accounts.setEmail(a, " Moved@Test.local ");
      expect((await accounts.findById(a))!.email).toBe("moved@test.local");
      await expect(accounts.setEmail(b, "moved@test.local")).rejects.toThrow("already exists");
      expect((await accounts.findById(b))!.email).toBe(`l${n}@test.local`);
    });

    it("cancel every pending link of an account at a change of password, and no other account's", async () => {
      const acc = await account();
      const other = await account();
      const reset = await issue(acc, "password_reset", 1_000);
      const change = await issue(acc, "email_change", 1_000, "thief@test.local");
      const theirs = await issue(other, "email_change", 1_000, "theirs@test.local");
      await links.cancelAll(acc, 2_000);
      expect(await links.peek(reset, "password_reset", 2_000)).toBeNull();
      expect(await links.peek(change, "email_change", 2_000)).toBeNull();
      expect(await links.peek(theirs, "email_change", 2_000)).toEqual({ accountId: other, newEmail: "theirs@test.local" });
    });

    it("forget every link of an account at its closure, used or pending, and no other account's", async () => {
      const acc = await account();
      const other = await account();
      const reset = await issue(acc, "password_reset", 1_000);
      const change = await issue(acc, "email_change", 1_000, "kept-private@test.local");
      const theirs = await issue(other, "password_reset", 1_000);
      await links.forget(acc);
      expect(await links.consume(reset, "password_reset", 2_000)).toBeNull();
      expect(await links.consume(change, "email_change", 2_000)).toBeNull();
      expect(await links.peek(theirs, "password_reset", 2_000)).toEqual({ accountId: other, newEmail: null });
    });

    it("refuse to change a closed account's address 409 account_closed, keeping it anonymised", async () => {
      const a = await account();
      await accounts.close(a, (await accounts.findById(a))!.balanceNano, 2_000);
      await expect(accounts.setEmail(a, `revived${n}@test.local`)).rejects.toMatchObject({ code: "account_closed" });
      expect((await accounts.findById(a))!.email).toBe(`closed-account-${a}`);
    });
  });
}
