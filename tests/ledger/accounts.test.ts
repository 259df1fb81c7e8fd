import { afterEach, beforeEach, describe, expect, it } from "bun:test";
import { migrate, openDatabase, type Db } from "../../src/store/engine/sqlite/client.ts";
import { Accounts } from "../../src/store/accounts/sqlite.ts";
import { Ledger } from "../../src/store/ledger/sqlite.ts";

// The accounts' cold reads and the operator's debit (ledger/accounts.ts), as the CLI calls them.

const USD = 1_000_000_000;
let db: Db;
let ledger: Ledger;
let accounts: Accounts;
beforeEach(() => {
  db = openDatabase(":memory:");
  migrate(db);
  ledger = new Ledger(db);
  accounts = new Accounts(db, ledger);
});
afterEach(() => db.$client.close());

describe("accounts", () => {
  it("are listed oldest first, without their password hash", async () => {
    const a = await accounts.create("a@accounts.test", { passwordHash: "secret-hash" });
    const b = await accounts.create("b@accounts.test");
    expect((await accounts.list()).map((x) => x.id)).toEqual([a.id, b.id]);
    expect(Object.keys((await accounts.list())[0]!)).not.toContain("passwordHash");
  });

  it("are found by id, and an unknown id finds none", async () => {
    const a = await accounts.create("a@accounts.test");
    expect((await accounts.findById(a.id))?.email).toBe("a@accounts.test");
    expect(await accounts.findById(999)).toBeNull();
  });
});

describe("recentEntries", () => {
  it("lists an account's newest ledger entries first, at most the limit", async () => {
    const a = await accounts.create("a@accounts.test");
    ledger.credit(a.id, 2 * USD, "operator_credit", "second");
    await accounts.debit(a.id, USD, "third");
    expect((await accounts.recentEntries(a.id, 2)).map((e) => [e.kind, e.amountNano, e.note])).toEqual([
      ["operator_debit", -USD, "third"],
      ["operator_credit", 2 * USD, "second"],
    ]);
  });
});

describe("debitAccount", () => {
  it("takes the amount off the balance with one operator_debit entry", async () => {
    const a = await accounts.create("a@accounts.test", { balanceNano: 3 * USD });
    expect(await accounts.debit(a.id, USD, "correction")).toBe(2 * USD);
    expect(ledger.balance(a.id).balanceNano).toBe(2 * USD);
  });

  it("refuses an account that does not exist, writing nothing", async () => {
    await expect(accounts.debit(999, USD, "typo")).rejects.toThrow("no account with id 999");
    expect(await accounts.recentEntries(999, 10)).toEqual([]);
  });
});
