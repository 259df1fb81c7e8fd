import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { mintBatch } from "../../src/payments/codes.ts";
import { usdToNano } from "../../src/core/money.ts";
import type { TestGateway } from "../support/gateway.ts";
import { sqlAll } from "../support/keyed.ts";
import { body, Browser, dashboardGateway, freshEmail, refusedWith } from "./support.ts";

// docs/dashboard.md#invite-only-registration: with [dashboard] registration = "invite", a
// registration needs an unused code, whose value is the new account's starting credit (one
// redemption entry, outside the day's ceiling); without one, or with a used one, no account is made.

setDefaultTimeout(60_000);

let gw: TestGateway;
let open: TestGateway;
beforeAll(async () => {
  // A day's ceiling of 0: an invited account's credit is not counted against it.
  gw = await dashboardGateway({ dashboard: { registration: "invite", starting_credit_daily_usd: 0 } });
  open = await dashboardGateway();
});
afterAll(async () => {
  await gw.stop();
  await open.stop();
});

const mint = async (usd: number) => (await mintBatch(gw.services.codes, { amountNano: usdToNano(usd), count: 1, expiresAt: null, note: null, createdByAccountId: null })).codes[0]!;
const accountOf = (email: string) => sqlAll<{ id: number; balance_nano: number }>(gw, "SELECT id, balance_nano FROM accounts WHERE email = ?", email)[0];
const register = (b: Browser, email: string, code?: string) => b.call("POST", "/api/register", { email, password: "correct horse", ...(code === undefined ? {} : { code }) });

describe("invite-only registration", () => {
  it("opens the account with the code's value as its one redemption entry, logged in", async () => {
    const code = await mint(3);
    const b = new Browser(gw.url);
    const email = freshEmail();
    const res = await register(b, email, code);
    expect(res.status).toBe(201);
    expect(await body(res)).toMatchObject({ balance_usd: 3, starting_credit_usd: 3, starting_credit_limited: false });
    const acc = accountOf(email)!;
    expect(sqlAll(gw, "SELECT kind, amount_nano FROM ledger_entries WHERE account_id = ?", acc.id)).toEqual([{ kind: "redemption", amount_nano: usdToNano(3) }]);
    expect((await b.call("GET", "/api/me")).status).toBe(200);
  });

  it("refuses a registration without a code (400 code_required) and makes no account", async () => {
    const email = freshEmail();
    await refusedWith(await register(new Browser(gw.url), email), 400, "code_required");
    expect(accountOf(email)).toBeUndefined();
  });

  it("refuses a used code as an unknown one, and makes no account", async () => {
    const code = await mint(1);
    expect((await register(new Browser(gw.url), freshEmail(), code)).status).toBe(201);
    const email = freshEmail();
    const used = await refusedWith(await register(new Browser(gw.url), email, code), 400, "code_invalid");
    const unknown = await refusedWith(await register(new Browser(gw.url), freshEmail(), "GW-AAAA-BBBB-CCCC-DDDD"), 400, "code_invalid");
    expect(used).toBe(unknown);
    expect(accountOf(email)).toBeUndefined();
  });

  it("lets one of 5 registrations with one code at the same moment in", async () => {
    const code = await mint(2);
    const emails = Array.from({ length: 5 }, freshEmail);
    const statuses = (await Promise.all(emails.map((e) => register(new Browser(gw.url), e, code)))).map((r) => r.status).sort();
    expect(statuses).toEqual([201, 400, 400, 400, 400]);
    expect(emails.map(accountOf).filter(Boolean)).toHaveLength(1);
  });
});

describe("open registration", () => {
  it("refuses a code in the body: it is redeemed on the top-up page instead", async () => {
    expect(await refusedWith(await register(new Browser(open.url), freshEmail(), "GW-AAAA-BBBB-CCCC-DDDD"), 400, "invalid_request")).toContain("top-up page");
  });
});
