import { afterEach, beforeEach, describe, expect, it } from "bun:test";
import { migrate, openDatabase, type Db } from "../../src/store/engine/sqlite/client.ts";
import { createAccount, debitAccount, findAccountById, listAccounts, recentEntries } from "../../src/store/accounts/sqlite.ts";
import { Ledger } from "../../src/store/ledger/sqlite.ts";

// The accounts' cold reads and the operator's debit (ledger/accounts.ts), as the CLI calls them.

const USD = 1_000_000_000;
let db: Db;
let ledger: Ledger;
beforeEach(() => {
  db = openDatabase(":memory:");
  migrate(db);
  ledger = new Ledger(db);
});
afterEach(() => db.$client.close());

describe("accounts", () => {
  it("are listed oldest first, without their password hash", () => {
    const a = createAccount(db, ledger, "a@accounts.test", { passwordHash: "secret-hash" });
    const b = createAccount(db, ledger, "b@accounts.test");
    expect(listAccounts(db).map((x) => x.id)).toEqual([a.id, b.id]);
    expect(Object.keys(listAccounts(db)[0]!)).not.toContain("passwordHash");
  });

  it("are found by id, and an unknown id finds none", () => {
    const a = createAccount(db, ledger, "a@accounts.test");
    expect(findAccountById(db, a.id)?.email).toBe("a@accounts.test");
    expect(findAccountById(db, 999)).toBeNull();
  });
});

describe("recentEntries", () => {
  it("lists an account's newest ledger entries first, at most the limit", () => {
    const a = createAccount(db, ledger, "a@accounts.test");
    ledger.credit(a.id, 2 * USD, "operator_credit", "second");
    debitAccount(db, a.id, USD, "third");
    expect(recentEntries(db, a.id, 2).map((e) => [e.kind, e.amountNano, e.note])).toEqual([
      ["operator_debit", -USD, "third"],
      ["operator_credit", 2 * USD, "second"],
    ]);
  });
});

describe("debitAccount", () => {
  it("takes the amount off the balance with one operator_debit entry", () => {
    const a = createAccount(db, ledger, "a@accounts.test", { balanceNano: 3 * USD });
    expect(debitAccount(db, a.id, USD, "correction")).toBe(2 * USD);
    expect(ledger.balance(a.id).balanceNano).toBe(2 * USD);
  });

  it("refuses an account that does not exist, writing nothing", () => {
    expect(() => debitAccount(db, 999, USD, "typo")).toThrow("no account with id 999");
    expect(recentEntries(db, 999, 10)).toEqual([]);
  });
});
