import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { mintBatch } from "../../src/payments/codes.ts";
import { usdToNano } from "../../src/core/money.ts";
import type { TestGateway } from "../support/gateway.ts";
import { sqlAll } from "../support/keyed.ts";
import { body, Browser, dashboardGateway, freshEmail, refusedWith } from "./support.ts";

// docs/dashboard.md#redemption-codes: POST /api/redeem credits a code's value once, refuses an
// expired, used or unknown code without moving money, and throttles guesses; the admin routes list
// and mint batches. Invited registration: tests/api/invite.test.ts.

// Argon2id per registration: seconds on a loaded machine.
setDefaultTimeout(60_000);

let gw: TestGateway;
beforeAll(async () => {
  gw = await dashboardGateway();
});
afterAll(() => gw.stop());

/** `n` codes of `usd` each, minted as the operator's CLI does. */
async function mint(usd: number, n = 1, expiresAt: number | null = null): Promise<string[]> {
  return (await mintBatch(gw.services.codes, { amountNano: usdToNano(usd), count: n, expiresAt, note: null, createdByAccountId: null })).codes;
}

/** A registered, logged-in holder (1 USD starting credit) and its id. */
async function holder(ip?: string): Promise<{ b: Browser; id: number }> {
  const b = new Browser(gw.url, ip);
  await b.register();
  return { b, id: (await body(await b.call("GET", "/api/me"))).id };
}

const balanceOf = (id: number) => sqlAll<{ balance_nano: number }>(gw, "SELECT balance_nano FROM accounts WHERE id = ?", id)[0]!.balance_nano;
const redeem = (b: Browser, code: string) => b.call("POST", "/api/redeem", { code });

describe("POST /api/redeem", () => {
  it("credits the code's value once, as one redemption entry, and answers the new balance", async () => {
    const [code] = await mint(2.5);
    const { b, id } = await holder();
    const res = await redeem(b, code!);
    expect(res.status).toBe(200);
    expect(await body(res)).toMatchObject({ balance_usd: 3.5, redeemed_usd: 2.5 });
    expect(balanceOf(id)).toBe(usdToNano(3.5));
    const kinds = sqlAll<{ kind: string; amount_nano: number }>(gw, "SELECT kind, amount_nano FROM ledger_entries WHERE account_id = ? ORDER BY id", id);
    expect(kinds).toEqual([
      { kind: "registration_credit", amount_nano: usdToNano(1) },
      { kind: "redemption", amount_nano: usdToNano(2.5) },
    ]);
  });

  it("takes the code as a person retypes it: lower case, spaces, O for 0 and I or L for 1", async () => {
    const [code] = await mint(1);
    const { b, id } = await holder();
    const typed = ` ${code!.toLowerCase().replace(/-/g, " ").replace(/0/g, "o").replace(/1/g, "l")} `;
    expect((await redeem(b, typed)).status).toBe(200);
    expect(balanceOf(id)).toBe(usdToNano(2));
  });

  it("credits once when one code is redeemed 20 times at the same moment by 20 accounts", async () => {
    const [code] = await mint(5);
    // One after another: what runs at the same moment is the redeeming, not the registrations (whose
    // password hashing the gateway runs a few at a time, refusing the rest with 429).
    const holders: Awaited<ReturnType<typeof holder>>[] = [];
    for (let i = 0; i < 20; i++) holders.push(await holder());
    const answers = await Promise.all(holders.map((h) => redeem(h.b, code!)));
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses).toEqual([200, ...Array(19).fill(400)]);
    for (const r of answers) if (r.status === 400) await refusedWith(r, 400, "code_invalid");
    const total = holders.reduce((sum, h) => sum + balanceOf(h.id), 0);
    expect(total).toBe(usdToNano(20 + 5));
  });

  it("refuses a used code and an unknown one with the same answer, the balance unchanged", async () => {
    const [code] = await mint(1);
    await redeem((await holder()).b, code!);
    const { b, id } = await holder();
    const used = await refusedWith(await redeem(b, code!), 400, "code_invalid");
    const unknown = await refusedWith(await redeem(b, "GW-AAAA-BBBB-CCCC-DDDD"), 400, "code_invalid");
    const garbage = await refusedWith(await redeem(b, "not a code"), 400, "code_invalid");
    expect(new Set([used, unknown, garbage]).size).toBe(1);
    expect(balanceOf(id)).toBe(usdToNano(1));
  });

  it("refuses an expired code with code_expired, the balance unchanged", async () => {
    const [code] = await mint(1, 1, Date.now() + 100);
    await Bun.sleep(150);
    const { b, id } = await holder();
    expect(await refusedWith(await redeem(b, code!), 400, "code_expired")).toContain("expired");
    expect(balanceOf(id)).toBe(usdToNano(1));
  });

  it("writes an audit row for each redemption, naming the batch and the amount", async () => {
    const [code] = await mint(3);
    const { b, id } = await holder();
    await redeem(b, code!);
    const rows = sqlAll<{ action: string; detail: string }>(gw, "SELECT action, detail FROM audit_log WHERE target_account_id = ?", id);
    expect(rows).toEqual([{ action: "code_redeemed", detail: expect.stringMatching(/^batch \d+: 3 USD$/) }]);
  });

  it("needs a session and the dashboard's Origin", async () => {
    const [code] = await mint(1);
    await refusedWith(await new Browser(gw.url).call("POST", "/api/redeem", { code }), 401, "no-session");
    const { b, id } = await holder();
    await refusedWith(await b.call("POST", "/api/redeem", { code }, { origin: "https://evil.example" }), 403, "origin");
    expect(balanceOf(id)).toBe(usdToNano(1));
  });
});

describe("guessing codes", () => {
  it("30 wrong codes at once on one account: 10 are looked up (400), 20 are 429 with Retry-After, and then a good code is refused too", async () => {
    const { b, id } = await holder();
    const answers = await Promise.all(Array.from({ length: 30 }, () => redeem(b, "GW-AAAA-BBBB-CCCC-DDDD")));
    const counts: Record<number, number> = {};
    for (const r of answers) {
      counts[r.status] = (counts[r.status] ?? 0) + 1;
      if (r.status === 429) expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
    }
    expect(counts).toEqual({ 400: 10, 429: 20 });
    const [good] = await mint(1);
    await refusedWith(await redeem(b, good!), 429, "rate_limit");
    expect(balanceOf(id)).toBe(usdToNano(1));
  });

  it("counts failures per address across accounts: the 21st refused code from one address is 429", async () => {
    const ip = `10.251.${Math.floor(Math.random() * 250)}.7`;
    const holders = await Promise.all(Array.from({ length: 3 }, () => holder(ip)));
    const statuses: number[] = [];
    for (let i = 0; i < 21; i++) statuses.push((await redeem(holders[i % 3]!.b, "GW-AAAA-BBBB-CCCC-DDDD")).status);
    expect(statuses.slice(0, 20).every((s) => s === 400)).toBe(true);
    expect(statuses[20]).toBe(429);
  });

  it("gives a good code's attempt back: 15 redemptions in a row on one account all credit", async () => {
    const codes = await mint(1, 15);
    const { b, id } = await holder();
    for (const code of codes) expect((await redeem(b, code)).status).toBe(200);
    expect(balanceOf(id)).toBe(usdToNano(16));
  });
});

describe("the admin's code routes", () => {
  async function admin() {
    const h = await holder();
    await gw.services.accounts.setAdmin(h.id, true);
    return h;
  }

  it("mint a batch whose codes are shown once and credit when redeemed", async () => {
    const { b } = await admin();
    const res = await b.call("POST", "/api/admin/codes", { usd: "2", count: 3, note: "launch" });
    expect(res.status).toBe(201);
    const made = await body(res);
    expect(made).toMatchObject({ object: "code_batch", usd: 2, count: 3, used: 0, note: "launch" });
    expect(made.codes).toHaveLength(3);
    for (const c of made.codes) expect(c).toMatch(/^GW(-[0-9A-HJKMNP-TV-Z]{4}){4}$/);
    const list = await body(await b.call("GET", "/api/admin/codes"));
    expect(JSON.stringify(list)).not.toContain(made.codes[0]);
    const other = await holder();
    await redeem(other.b, made.codes[0]);
    const row = (await body(await b.call("GET", "/api/admin/codes"))).data.find((x: { id: number }) => x.id === made.id);
    expect(row).toMatchObject({ count: 3, used: 1, unused: 2, created_by_account_id: expect.any(Number) });
  });

  it("refuse a session that is not admin, and a batch amount finer than a nano-dollar", async () => {
    const { b } = await holder();
    await refusedWith(await b.call("GET", "/api/admin/codes"), 403, "admin");
    await refusedWith(await b.call("POST", "/api/admin/codes", { usd: 1 }), 403, "admin");
    const a = await admin();
    expect(await refusedWith(await a.b.call("POST", "/api/admin/codes", { usd: "0.0000000001" }), 400, "invalid_request")).toContain("usd");
    await refusedWith(await a.b.call("POST", "/api/admin/codes", { usd: 0 }), 400, "invalid_request");
  });
});
