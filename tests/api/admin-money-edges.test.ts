import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import type { TestGateway } from "../support/gateway.ts";
import { sqlAll } from "../support/keyed.ts";
import { adminOn, body, dashboardGateway, holderOn, refusedWith } from "./support.ts";

// Every login and registration hashes a password with Argon2id: a few seconds a test on a loaded machine.
setDefaultTimeout(60_000);

// docs/dashboard.md#admin and docs/api.md#amounts-in-usd: the admin's credit and debit at the edges of
// what an amount can be. A refused amount moves nothing and writes no audit row; an accepted one
// moves exactly what was written; the balance equals the sum of the account's ledger entries after
// each. Two debits racing on a small balance cannot both pass; the balance has a ceiling.

let gw: TestGateway;
let admin: Awaited<ReturnType<typeof adminOn>>;
beforeAll(async () => {
  gw = await dashboardGateway();
  admin = await adminOn(gw);
});
afterAll(() => gw.stop());

const USD = 1_000_000_000;

/** The account's balance, its ledger's sum and its audit rows. */
function books(accountId: number) {
  const [row] = sqlAll<{ balance: number; ledger: number; audits: number }>(
    gw,
    `SELECT balance_nano AS balance, (SELECT coalesce(sum(amount_nano), 0) FROM ledger_entries WHERE account_id = ?1) AS ledger,
       (SELECT count(*) FROM audit_log WHERE target_account_id = ?1) AS audits FROM accounts WHERE id = ?1`,
    accountId,
  );
  expect(row!.balance).toBe(row!.ledger);
  return row!;
}

/** An account of 1 USD (made in the database: registrations would soon meet the day's ceiling on starting credits). */
const target = async (usd: number | string = 1) => ({ id: (await gw.account(usd)).accountId });

const move = (op: "credit" | "debit", accountId: number, usd: unknown, note = "edge") => admin.b.call("POST", `/api/admin/accounts/${accountId}/${op}`, { usd, note });

// JSON values that are no amount above 0 with at most 9 decimals: each is 400 invalid_request naming usd.
const REFUSED: unknown[] = [0, -0, -1, "-1", "abc", "", "1e3", "1E3", "0x10", "+1", ".5", "1,5", "1_000", "Infinity", "NaN", 1e21, 5e-324, "0.0000000001", 1.0000000001, 0.1 + 0.2, "9007199.254740992", null, true, [1], {}];

for (const op of ["credit", "debit"] as const) {
  describe(`an admin's ${op} at the edges`, () => {
    for (const usd of REFUSED) {
      it(`refuses ${JSON.stringify(usd)} with 400 invalid_request naming usd, moving nothing`, async () => {
        const h = await target();
        const before = books(h.id);
        expect(await refusedWith(await move(op, h.id, usd), 400, "invalid_request")).toStartWith("usd: ");
        expect(books(h.id)).toEqual(before);
      });
    }

    // A number in exponent form is the number it reads as (JSON has no other way to write 1e3); text in exponent form is not an amount.
    for (const [usd, nano] of [[1e-9, 1], [1e-3, USD / 1000], ["0.000000001", 1], [" 0.5 ", USD / 2], ["0.500000000", USD / 2]] as const) {
      it(`moves exactly ${nano} nano-dollars for ${JSON.stringify(usd)}`, async () => {
        const h = await target();
        const before = books(h.id);
        const res = await move(op, h.id, usd);
        expect(res.status).toBe(200);
        const after = books(h.id);
        expect(after.balance - before.balance).toBe(op === "credit" ? nano : -nano);
        expect(after.audits).toBe(before.audits + 1);
      });
    }
  });
}

describe("an admin's code batch at the edges", () => {
  const batches = () => sqlAll<{ n: number }>(gw, "SELECT count(*) AS n FROM code_batches")[0]!.n;
  for (const usd of REFUSED) {
    it(`refuses a value of ${JSON.stringify(usd)} with 400 invalid_request naming usd, minting nothing`, async () => {
      const before = batches();
      expect(await refusedWith(await admin.b.call("POST", "/api/admin/codes", { usd, count: 1 }), 400, "invalid_request")).toStartWith("usd: ");
      expect(batches()).toBe(before);
    });
  }
  for (const count of [0, -1, 1.5, 10_001, "5", null]) {
    it(`refuses a count of ${JSON.stringify(count)} with 400 invalid_request naming count, minting nothing`, async () => {
      const before = batches();
      expect(await refusedWith(await admin.b.call("POST", "/api/admin/codes", { usd: 1, count }), 400, "invalid_request")).toStartWith("count: ");
      expect(batches()).toBe(before);
    });
  }
});

describe("an admin's credit of 1e3 written as a JSON number", () => {
  it("credits exactly 1000 USD", async () => {
    const h = await target();
    const res = await admin.b.call("POST", `/api/admin/accounts/${h.id}/credit`, '{"usd": 1e3, "note": "exponent"}');
    expect(res.status).toBe(200);
    expect(books(h.id).balance).toBe(1001 * USD);
  });
});

describe("the same credit sent twice", () => {
  it("credits twice: the admin's credit is an action, not an idempotent request, and each has its audit row", async () => {
    const h = await target();
    const [a, b] = await Promise.all([move("credit", h.id, 2), move("credit", h.id, 2)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    const after = books(h.id);
    expect(after.balance).toBe(5 * USD);
    expect(after.audits).toBe(2);
  });
});

describe("debits racing on a small balance", () => {
  it("passes one of two 0.60 USD debits sent at once on 1 USD; the other is refused and the balance never goes below zero", async () => {
    const h = await target();
    const answers = await Promise.all([move("debit", h.id, 0.6), move("debit", h.id, 0.6)]);
    expect(answers.map((r) => r.status).sort()).toEqual([200, 400]);
    expect(books(h.id).balance).toBe(0.4 * USD);
  });

  it("passes exactly ten of 30 debits of 0.10 USD sent at once on 1 USD", async () => {
    const h = await target();
    const answers = await Promise.all(Array.from({ length: 30 }, () => move("debit", h.id, "0.1")));
    expect(answers.filter((r) => r.status === 200)).toHaveLength(10);
    expect(answers.filter((r) => r.status === 400)).toHaveLength(20);
    const after = books(h.id);
    expect(after.balance).toBe(0);
    expect(after.audits).toBe(10);
  });
});

describe("the balance's ceiling", () => {
  it("refuses a credit past 9007199.254740991 USD with 400 invalid_request naming the ceiling, moving nothing and writing no audit row", async () => {
    const h = await target();
    expect((await move("credit", h.id, "9007198.254740990")).status).toBe(200);
    expect(books(h.id).balance).toBe(Number.MAX_SAFE_INTEGER - 1);
    const before = books(h.id);
    const message = await refusedWith(await move("credit", h.id, "0.000000002"), 400, "invalid_request");
    expect(message).toContain("past 9007199.254740991 USD");
    expect(books(h.id)).toEqual(before);
    expect(await body(await move("credit", h.id, "0.000000001"))).toMatchObject({ balance_usd: Number.MAX_SAFE_INTEGER / USD });
    expect(books(h.id).balance).toBe(Number.MAX_SAFE_INTEGER);
  });

  it("refuses a code whose value would pass it, leaving the code unused for another account", async () => {
    const made = await body(await admin.b.call("POST", "/api/admin/codes", { usd: "5", count: 1 }));
    const full = await holderOn(gw);
    expect((await move("credit", full.id, "9007195.254740991")).status).toBe(200);
    const before = books(full.id);
    await refusedWith(await full.b.call("POST", "/api/redeem", { code: made.codes[0] }), 400, "invalid_request");
    expect(books(full.id)).toEqual(before);
    const other = await holderOn(gw);
    const redeemed = await other.b.call("POST", "/api/redeem", { code: made.codes[0] });
    expect(redeemed.status).toBe(200);
    expect(books(other.id).balance).toBe(6 * USD);
  });
});

describe("a credit or debit that joins a batch whose COMMIT then fails", () => {
  // A charge settled in the same turn of the event loop opens the group commit's batch, and the
  // operator's write joins it; a COMMIT that fails (a full disk; here a deferred foreign key broken
  // by the charge's stand-in) takes both back. The answer must then not say the money moved.
  const db = () => gw.services.db.$client;
  const failingBatch = () => {
    void gw.services.commits.run(() => db().run("INSERT INTO dangling (ref) VALUES (-1)")).catch(() => {});
  };
  beforeAll(() => db().exec("CREATE TABLE dangling (id INTEGER PRIMARY KEY, ref INTEGER REFERENCES dangling(id) DEFERRABLE INITIALLY DEFERRED)"));

  for (const op of ["credit", "debit"] as const) {
    it(`answers the ${op} with the failure, not 200, and the books are as before; the retry moves it once`, async () => {
      const h = await target(2);
      const owner = op === "credit" ? gw.services.ledger : gw.services.accounts;
      const method = op === "credit" ? "credit" : "debit";
      const original = (owner as unknown as Record<string, (...a: unknown[]) => unknown>)[method]!;
      (owner as unknown as Record<string, unknown>)[method] = function (this: unknown, ...args: unknown[]) {
        failingBatch();
        return original.apply(this, args);
      };
      const before = books(h.id);
      let res: Response;
      try {
        res = await move(op, h.id, 1);
      } finally {
        (owner as unknown as Record<string, unknown>)[method] = original;
      }
      expect(res.status).toBeGreaterThanOrEqual(500);
      expect(books(h.id).balance).toBe(before.balance);
      expect((await move(op, h.id, 1)).status).toBe(200);
      expect(books(h.id).balance).toBe(before.balance + (op === "credit" ? USD : -USD));
    });
  }
});
