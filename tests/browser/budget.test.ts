import { afterAll, afterEach, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { body } from "../api/support.ts";
import { expectError } from "../support/errors.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { messagesBody, postWithApiKey } from "../support/keyed.ts";
import { openTab, signIn, visit, type Tab } from "./support.ts";

// A key's daily budget in a real browser (docs/api.md#budgets): the holder sets it in the keys page,
// spends it through /v1 until a call is refused, the page says "budget reached", and once the
// ledger's clock passes the UTC reset (moved by the test, as tests/ledger/budget.test.ts does) the
// key serves again and the page shows the budget recovered. The steps share one page, in order.

setDefaultTimeout(30_000);

// Thursday 26 November 2026, 15:00 UTC: the day resets in 9 hours.
const THURSDAY = Date.parse("2026-11-26T15:00:00Z");
const MIDNIGHT = Date.parse("2026-11-27T00:00:00Z");
// About 4,000 input tokens of the demo model (1 USD per million): some 0.004 USD a call, so a
// budget of 0.01 USD (the form's step) is spent in two or three calls.
const BODY = messagesBody(16, "demo", "x".repeat(16_000));

let gw: TestGateway;
let tab: Tab;
let now = THURSDAY;
let key = "";

beforeAll(async () => {
  gw = await startTestGateway();
  gw.services.ledger.clock.now = () => now;
  tab = await openTab("budget", gw.url);
});

afterAll(async () => {
  await tab?.close();
  await gw?.stop();
});

afterEach(() => {
  expect(tab.problems()).toEqual([]);
});

/** The keys page loaded afresh: the same address again would be no navigation, and show the last figures. */
async function keysPage(): Promise<void> {
  await tab.page.goto("about:blank");
  await visit(tab.page, gw.url, "keys", "Keys");
}

const row = () => tab.page.getByRole("row").filter({ hasText: "ci" });

/** The keys page at desktop width and at a phone's 390 px, each without sideways scrolling. */
async function shots(name: string): Promise<void> {
  const { page } = tab;
  await tab.shot(name);
  await page.setViewportSize({ width: 390, height: 844 });
  expect(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")).toBe(true);
  await tab.shot(`${name}-phone`);
  await page.setViewportSize({ width: 1100, height: 900 });
}

describe("a key's daily budget in the keys page", () => {
  it("is set on a new key in the keys page and shown against today's spend", async () => {
    const { page } = tab;
    await signIn(page, gw.url, "register", "budget@example.test", "correct horse battery");
    await visit(page, gw.url, "keys", "Keys");
    await page.getByRole("button", { name: "New key" }).click();
    const form = page.getByRole("form", { name: "Create a key" });
    await form.getByLabel("Name").fill("ci");
    await form.getByLabel("Budget (USD)").fill("0.01");
    await form.getByLabel("Budget resets").selectOption("day");
    await form.getByRole("button", { name: "Create key" }).click();
    key = (await page.getByTestId("new-key").textContent()) ?? "";
    expect(key).toMatch(/^gk_sk_/);
    expect(await row().textContent()).toContain("$0.00 / $0.01 today");
  });

  it("refuses the call past it with 429 quota, Retry-After to the UTC reset and a message naming the reset", async () => {
    let served = 0;
    let refused: Response | null = null;
    while (!refused && served < 10) {
      const res = await postWithApiKey(gw, "/v1/messages", BODY, key);
      if (res.status === 200) {
        served++;
        await res.arrayBuffer();
      } else refused = res;
    }
    expect(served).toBeGreaterThan(0);
    expect(refused).not.toBeNull();
    expect(refused!.headers.get("retry-after")).toBe(String(9 * 3600));
    const err = await expectError(refused!, 429, "quota", "insufficient_quota");
    expect(err.message).toStartWith("This key's daily budget of 0.01 USD");
    expect(err.message).toContain("it resets at 2026-11-27T00:00:00Z");
  });

  it("shows budget reached on the keys page, with the reset", async () => {
    const { page } = tab;
    await keysPage();
    const notice = page.getByTestId("budget-reached");
    await notice.waitFor();
    expect(await notice.textContent()).toContain("Budget reached: key ci has spent its $0.01 today; it resets at");
    expect(await notice.textContent()).toContain(await page.evaluate(`new Date(${MIDNIGHT}).toLocaleString()`));
    await shots("reached");
  });

  it("serves the key again once the ledger's clock passes the UTC reset, and the page shows the budget recovered", async () => {
    const { page } = tab;
    now = MIDNIGHT;
    const res = await postWithApiKey(gw, "/v1/messages", BODY, key);
    expect(res.status).toBe(200);
    const cost = (await body<{ usage: { cost_usd: number } }>(res)).usage.cost_usd;
    expect(cost).toBeGreaterThan(0);
    await keysPage();
    await row().filter({ hasText: "/ $0.01 today" }).waitFor();
    expect(await page.getByTestId("budget-reached").count()).toBe(0);
    // The new day's spend is that one call: what is left of the budget serves again.
    expect(await row().textContent()).toContain(`$${cost} / $0.01 today`);
    await shots("recovered");
  });
});

describe("a key's lifetime quota in the keys page", () => {
  it("is never spent past: the call past it is 429 quota, and the account's balance is the sum of its ledger", async () => {
    const { page } = tab;
    await keysPage();
    await page.getByRole("button", { name: "New key" }).click();
    const form = page.getByRole("form", { name: "Create a key" });
    await form.getByLabel("Name").fill("capped");
    await form.getByLabel("Quota (USD)").fill("0.01");
    await form.getByRole("button", { name: "Create key" }).click();
    const capped = (await page.getByTestId("new-key").textContent()) ?? "";
    expect(capped).toMatch(/^gk_sk_/);
    let served = 0;
    let refused: Response | null = null;
    while (!refused && served < 10) {
      const res = await postWithApiKey(gw, "/v1/messages", BODY, capped);
      if (res.status === 200) {
        served++;
        await res.arrayBuffer();
      } else refused = res;
    }
    expect(served).toBeGreaterThan(0);
    expect((await expectError(refused!, 429, "quota", "insufficient_quota")).message).toContain("0.01 USD");
    const books = gw.services.db.$client
      .query(
        `SELECT k.spent_nano AS spent, a.balance_nano AS balance, (SELECT coalesce(sum(amount_nano), 0) FROM ledger_entries WHERE account_id = a.id) AS ledger
         FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.name = 'capped'`,
      )
      .get() as { spent: number; balance: number; ledger: number };
    expect(books.spent).toBeGreaterThan(0);
    expect(books.spent).toBeLessThanOrEqual(10_000_000);
    expect(books.balance).toBe(books.ledger);
  });
});
