import { afterAll, afterEach, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { Browser as ApiBrowser } from "../api/support.ts";
import { gateway } from "../support/cli.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { openTab, signIn, visit, type Tab } from "./support.ts";

// The operator's console in a real browser, at a desktop's width and a phone's (390 px): find an
// account by search, open its page (keys, requests, ledger), add a note, make a key for it, credit
// it (its balance checked in the database), read the gateway's totals, create an account and set
// its password.

setDefaultTimeout(60_000);

let gw: TestGateway;
const ADMIN = "console-admin@example.test";
const HOLDERS = { desktop: "a-rather-long-holder-address-for-truncation@example.test", phone: "phone-holder@example.test" };

beforeAll(async () => {
  gw = await startTestGateway();
  await new ApiBrowser(gw.url).register(ADMIN, "admin password");
  expect((await gateway(["account", "update", "--email", ADMIN, "--admin", "--db", gw.config.database])).code).toBe(0);
  for (const email of Object.values(HOLDERS)) {
    const holder = new ApiBrowser(gw.url);
    await holder.register(email);
    const { key } = (await (await holder.call("POST", "/api/keys", { name: "laptop" })).json()) as { key: string };
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "demo", max_tokens: 20, messages: [{ role: "user", content: "Hello" }] }),
    });
    expect(res.status).toBe(200);
  }
});

afterAll(() => gw?.stop());

/** The account's balance, checked against the sum of its ledger entries. */
function balanceNano(email: string): number {
  const row = gw.services.db.$client
    .query("SELECT balance_nano AS balance, (SELECT coalesce(sum(amount_nano), 0) FROM ledger_entries WHERE account_id = a.id) AS ledger FROM accounts a WHERE email = ?")
    .get(email) as { balance: number; ledger: number };
  expect(row.balance).toBe(row.ledger);
  return row.balance;
}
const noteOf = (email: string) => gw.services.db.$client.query("SELECT n.note FROM account_notes n JOIN accounts a ON a.id = n.account_id WHERE a.email = ?").get(email) as { note: string } | null;

for (const [size, width] of [["desktop", 1100], ["phone", 390]] as const) {
  describe(`the admin console at ${width} px`, () => {
    let tab: Tab;
    const HOLDER = HOLDERS[size];
    beforeAll(async () => {
      tab = await openTab(`admin-console-${size}`, gw.url);
      await tab.page.setViewportSize({ width, height: 900 });
      await signIn(tab.page, gw.url, "login", ADMIN, "admin password");
    });
    afterAll(() => tab?.close());
    afterEach(() => expect(tab.problems()).toEqual([]));

    it("shows the gateway's totals: spend today and this month, by model and by provider", async () => {
      const { page } = tab;
      await visit(page, gw.url, "admin", "Admin");
      const spent = gw.services.db.$client.query("SELECT sum(cost_nano) AS c FROM request_logs").get() as { c: number };
      expect(spent.c).toBeGreaterThan(0);
      expect(await page.getByTestId("total-month").textContent()).toBe(`$${(spent.c / 1e9).toFixed(6).replace(/0{1,4}$/, "")}`);
      await page.getByRole("table", { name: "By model" }).getByRole("row").filter({ hasText: "demo-text-1" }).waitFor();
      await page.getByRole("table", { name: "By provider" }).waitFor();
      await tab.shot("totals");
    });

    it("finds the account by part of its email and opens its page: keys, requests, ledger", async () => {
      const { page } = tab;
      const search = page.getByRole("search", { name: "Find accounts" });
      await search.getByLabel("Email or account id").fill(HOLDER.slice(0, 12).toUpperCase());
      await search.getByRole("button", { name: "Search" }).click();
      const rows = page.getByRole("table", { name: "Accounts" }).getByRole("row");
      await page.getByText("1–1 of 1").waitFor();
      // One line per account, the long email cut with its whole text as the title.
      const row = rows.nth(1);
      const heights = await row.evaluate((tr) => [...tr.children].map((td) => td.getBoundingClientRect().height));
      expect(Math.max(...heights)).toBeLessThan(48);
      expect(await row.locator(".trunc").getAttribute("title")).toBe(HOLDER);
      await tab.shot("search");
      await row.getByRole("link").click();
      await page.getByRole("heading", { level: 1, name: HOLDER }).waitFor();
      await page.getByRole("table", { name: "Keys" }).getByRole("row").filter({ hasText: "laptop" }).waitFor();
      await page.getByRole("table", { name: "Recent requests" }).getByRole("row").filter({ hasText: "demo-text-1" }).waitFor();
      await page.getByRole("table", { name: "Ledger" }).getByRole("row").filter({ hasText: "registration_credit" }).waitFor();
    });

    it("adds an operator note, kept on the account", async () => {
      const { page } = tab;
      const form = page.getByRole("form", { name: "Operator note" });
      await form.getByLabel("Note (operators only)").fill("Pays by invoice; call before disabling.");
      await form.getByRole("button", { name: "Save note" }).click();
      await page.getByText("Note saved.").waitFor();
      expect(noteOf(HOLDER)).toEqual({ note: "Pays by invoice; call before disabling." });
      await page.reload();
      expect(await page.getByLabel("Note (operators only)").inputValue()).toBe("Pays by invoice; call before disabling.");
    });

    it("creates a key for the account, shown once, which then answers a model request", async () => {
      const { page } = tab;
      const form = page.getByRole("form", { name: "Create a key for this account" });
      await form.getByLabel("Key name").fill("given-by-ops");
      await form.getByRole("button", { name: "Create key" }).click();
      const key = (await page.locator(".once pre code").textContent())!;
      expect(key).toStartWith("gk_sk_");
      await page.getByRole("table", { name: "Keys" }).getByRole("row").filter({ hasText: "given-by-ops" }).waitFor();
      await tab.shot("account");
      const res = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
      expect(res.status).toBe(200);
      const owner = gw.services.db.$client.query("SELECT a.email FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.name = 'given-by-ops' AND a.email = ?").get(HOLDER);
      expect(owner).toEqual({ email: HOLDER });
    });

    it("credits the account after the dialog: the page and the database show the new balance", async () => {
      const { page } = tab;
      const before = balanceNano(HOLDER);
      const form = page.getByRole("form", { name: `Credit or debit ${HOLDER}` });
      await form.getByRole("radio", { name: "Credit" }).check();
      await form.getByLabel("USD").fill("4");
      await form.getByLabel("Note").fill("conference credit");
      await form.getByRole("button", { name: "Review" }).click();
      await page.getByRole("alertdialog").getByRole("button", { name: "Credit 4.00 USD" }).click();
      await page.getByRole("main").getByTestId(/^balance-/).filter({ hasText: `$${((before + 4e9) / 1e9).toFixed(6).replace(/0{1,4}$/, "")}` }).waitFor();
      expect(balanceNano(HOLDER)).toBe(before + 4_000_000_000);
      expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(width);
    });

    it("creates an account for someone with an opening balance, and lands on its page", async () => {
      const { page } = tab;
      const email = `made-${size}@example.test`;
      await visit(page, gw.url, "admin", "Admin");
      await page.getByText("New account").click();
      const form = page.getByRole("form", { name: "Create an account" });
      await form.getByLabel("Email").fill(email);
      await form.getByLabel("Opening balance (USD)").fill("3");
      await form.getByRole("button", { name: "Create account" }).click();
      await page.getByRole("heading", { level: 1, name: email }).waitFor();
      expect(await page.getByRole("main").getByTestId(/^balance-/).textContent()).toBe("$3.00");
      expect(balanceNano(email)).toBe(3_000_000_000);
    });

    it("sets the new account's dashboard password, with which its holder then logs in", async () => {
      const { page } = tab;
      const email = `made-${size}@example.test`;
      expect((await new ApiBrowser(gw.url).call("POST", "/api/login", { email, password: "given by the operator" })).status).toBe(401);
      const form = page.getByRole("form", { name: "Set the dashboard password" });
      await form.getByLabel("New password").fill("given by the operator");
      await form.getByRole("button", { name: "Set password" }).click();
      await page.getByText("Password set; 0 sessions ended.").waitFor();
      expect((await new ApiBrowser(gw.url).call("POST", "/api/login", { email, password: "given by the operator" })).status).toBe(200);
    });
  });
}
