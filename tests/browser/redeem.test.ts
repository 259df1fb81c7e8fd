import { afterAll, afterEach, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { mintBatch } from "../../src/payments/codes.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { startStripeMock, type StripeMock } from "../support/stripe-mock.ts";
import { openTab, signIn, textOf, visit, type Tab } from "./support.ts";

// Redemption codes in a real browser (docs/dashboard.md#redemption-codes): without Stripe the top-up
// page names whom to ask and redeems a code, the balance rising once; with Stripe the form is below
// the card top-up; an admin mints a batch in the page and sees its use.

setDefaultTimeout(30_000);

let gw: TestGateway;
let tab: Tab;

beforeAll(async () => {
  gw = await startTestGateway({ dashboard: { support_contact: "billing@example.test" } });
  tab = await openTab("redeem", gw.url);
});

afterAll(async () => {
  await tab?.close();
  await gw?.stop();
});

afterEach(() => {
  expect(tab.problems()).toEqual([]);
});

const mint = async (usd: number) => (await mintBatch(gw.services.codes, { amountNano: usd * 1e9, count: 1, expiresAt: null, note: "browser", createdByAccountId: null })).codes[0]!;

describe("the top-up page without Stripe", () => {
  it("names the support contact as a mail link and offers the code form", async () => {
    const { page } = tab;
    await signIn(page, gw.url, "register", "redeemer@example.test", "correct horse battery");
    await visit(page, gw.url, "topup", "Top up");
    const link = page.getByTestId("support-contact").getByRole("link", { name: "billing@example.test" });
    expect(await link.getAttribute("href")).toBe("mailto:billing@example.test");
    await page.getByRole("form", { name: "Redeem a code" }).waitFor();
    await tab.shot("topup-without-stripe");
  });

  it("redeems a code and shows the balance risen by its value, once", async () => {
    const { page } = tab;
    const code = await mint(4);
    expect(await page.getByTestId("topup-balance").textContent()).toContain("1.00");
    await page.getByLabel("Code", { exact: true }).fill(code.toLowerCase());
    await page.getByRole("button", { name: "Redeem" }).click();
    await textOf(page, "topup-balance", /5\.00/);
    await textOf(page, "nav-spendable", /5\.00/);
    await page.getByText(/Redeemed: \$4\.00 added/).waitFor();
    await tab.shot("redeemed");
    // The same code again: refused in the page, the balance unchanged (the 400 is the page's expected answer).
    await page.getByLabel("Code", { exact: true }).fill(code);
    await page.getByRole("button", { name: "Redeem" }).click();
    await page.getByText(/does not exist or has been redeemed already/).waitFor();
    expect(tab.problems().every((p) => p.startsWith("HTTP 400: POST") || p.startsWith("console: Failed to load resource"))).toBe(true);
    expect(await page.getByTestId("topup-balance").textContent()).toContain("5.00");
    await visit(page, gw.url, "", "Overview");
    await textOf(page, "balance", /5\.00/);
  });

  it("credits once when Redeem is double-clicked: the button is disabled while the first runs", async () => {
    const { page } = tab;
    await visit(page, gw.url, "topup", "Top up");
    const code = await mint(3);
    await page.getByLabel("Code", { exact: true }).fill(code);
    await page.getByRole("button", { name: "Redeem" }).dblclick();
    await page.getByText(/Redeemed: \$3\.00 added/).waitFor();
    await textOf(page, "topup-balance", /8\.00/);
    const books = gw.services.db.$client
      .query(
        `SELECT a.balance_nano AS balance, (SELECT coalesce(sum(amount_nano), 0) FROM ledger_entries WHERE account_id = a.id) AS ledger,
           (SELECT count(*) FROM ledger_entries WHERE account_id = a.id AND kind = 'redemption') AS redemptions FROM accounts a WHERE a.email = 'redeemer@example.test'`,
      )
      .get();
    expect(books).toEqual({ balance: 8e9, ledger: 8e9, redemptions: 2 });
  });
});

describe("the admin page's codes", () => {
  it("mints a batch shown once and lists its use", async () => {
    const { page } = tab;
    const me = gw.services.db.$client.query("SELECT id FROM accounts WHERE email = 'redeemer@example.test'").get() as { id: number };
    await gw.services.accounts.setAdmin(me.id, true);
    await visit(page, gw.url, "admin", "Admin");
    const form = page.getByRole("form", { name: "Create codes" });
    await form.getByLabel("USD each").fill("2");
    await form.getByLabel("Count").fill("2");
    await form.getByLabel("Note").fill("from the page");
    await form.getByRole("button", { name: "Create codes" }).click();
    await page.getByText(/Batch \d+: 2 codes of \$2\.00, shown only now/).waitFor();
    await page.getByRole("table", { name: "Code batches" }).getByRole("row").filter({ hasText: "from the page" }).waitFor();
    await tab.shot("admin-codes");
  });

  it("mints one batch when Create codes is double-clicked", async () => {
    const { page } = tab;
    const batches = () => (gw.services.db.$client.query("SELECT count(*) AS n FROM code_batches").get() as { n: number }).n;
    const before = batches();
    const form = page.getByRole("form", { name: "Create codes" });
    await form.getByLabel("USD each").fill("1");
    await form.getByLabel("Count").fill("1");
    await form.getByLabel("Note").fill("double click");
    await form.getByRole("button", { name: "Create codes" }).dblclick();
    await page.getByText(/Batch \d+: 1 codes of \$1\.00, shown only now/).waitFor();
    await page.getByRole("table", { name: "Code batches" }).getByRole("row").filter({ hasText: "double click" }).waitFor();
    expect(batches()).toBe(before + 1);
  });
});

describe("the top-up page with Stripe", () => {
  let stripe: StripeMock;
  let paid: TestGateway;
  let t: Tab;
  beforeAll(async () => {
    stripe = startStripeMock();
    paid = await startTestGateway(stripe.config());
    t = await openTab("redeem-stripe", paid.url);
  });
  afterAll(async () => {
    await t.close();
    await paid.stop();
    stripe.stop();
  });

  it("offers the code form below the card top-up", async () => {
    const { page } = t;
    await signIn(page, paid.url, "register", "card@example.test", "correct horse battery");
    await visit(page, paid.url, "topup", "Top up");
    const pay = await page.getByRole("form", { name: "Top up" }).boundingBox();
    const code = await page.getByRole("form", { name: "Redeem a code" }).boundingBox();
    expect(code!.y).toBeGreaterThan(pay!.y);
    await t.shot("topup-with-stripe");
    expect(t.problems()).toEqual([]);
  });
});
