import { afterAll, afterEach, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { hashPassword } from "../../src/auth/passwords.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { openTab, signIn, visit, type Tab } from "./support.ts";

// The account page's Close account in a real browser (docs/dashboard.md#closing-the-account): the
// password, the email typed again, the balance given up by a checkbox, a dialog; then the login page.

setDefaultTimeout(30_000);

let gw: TestGateway;
let tab: Tab;
const EMAIL = "closer@example.test";
const PASSWORD = "correct horse battery";

beforeAll(async () => {
  gw = await startTestGateway();
  tab = await openTab("close-account", gw.url);
});
afterAll(async () => {
  await tab?.close();
  await gw?.stop();
});
afterEach(() => {
  expect(tab.problems()).toEqual([]);
});

const books = (id: number) =>
  gw.services.db.$client.query("SELECT balance_nano AS balance, (SELECT SUM(amount_nano) FROM ledger_entries WHERE account_id = ?1) AS ledger, closed_at FROM accounts WHERE id = ?1").get(id) as {
    balance: number;
    ledger: number;
    closed_at: number | null;
  };

describe("Close account on the account page", () => {
  it("closes the account after the dialog, forfeiting the starting balance: the books show 0 and the page goes to login", async () => {
    const { page } = tab;
    await signIn(page, gw.url, "register", EMAIL, PASSWORD);
    const id = (await gw.services.accounts.find(EMAIL))!.id;
    await visit(page, gw.url, "account", "Account");
    const form = page.getByRole("form", { name: "Close account" });
    await form.getByLabel("Password").fill(PASSWORD);
    await form.getByLabel("Type your email to confirm").fill(EMAIL);
    await form.getByRole("checkbox").check();
    await tab.shot("close-account-form");
    await form.getByRole("button", { name: "Close account" }).click();
    await page.getByRole("alertdialog").getByRole("button", { name: "Close account" }).click();
    await page.getByRole("heading", { level: 1, name: "Log in" }).waitFor();
    expect(books(id)).toMatchObject({ balance: 0, ledger: 0 });
    expect(books(id).closed_at).not.toBeNull();
  });

  it("logs in no more with the old address and password", async () => {
    const { page } = tab;
    await visit(page, gw.url, "login", "Log in");
    await page.getByLabel("Email").fill(EMAIL);
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByText(/incorrect|invalid/i).first().waitFor();
    expect(await page.getByRole("heading", { level: 1, name: "Overview" }).count()).toBe(0);
    expect(tab.problems()).toEqual([expect.stringMatching(/^HTTP 401: POST .*\/api\/login$/), expect.stringContaining("status of 401")]);
  });

  it("leaves the admin page of the closed account without the controls the server refuses: credit, password, new key", async () => {
    const { page } = tab;
    const id = (await gw.services.accounts.list()).find((a) => a.closedAt !== null)!.id;
    await gw.services.accounts.create("operator@example.test", { passwordHash: await hashPassword(PASSWORD), admin: true, balanceNano: 0 });
    await signIn(page, gw.url, "login", "operator@example.test", PASSWORD);
    await page.goto(`${gw.url}/#/admin/account/${id}`);
    await page.getByTestId("closed-note").waitFor();
    await tab.shot("admin-closed-account");
    expect(await page.getByTestId("account-state").textContent()).toContain("closed");
    const money = page.getByRole("form", { name: `Debit closed-account-${id}` });
    expect(await money.getByRole("radio").count()).toBe(1);
    expect(await money.getByRole("radio", { name: "Debit" }).isChecked()).toBe(true);
    expect(await page.getByRole("radio", { name: "Credit" }).count()).toBe(0);
    expect(await page.getByRole("form", { name: "Set the dashboard password" }).count()).toBe(0);
    expect(await page.getByRole("form", { name: "Create a key for this account" }).count()).toBe(0);
    expect(await page.getByRole("button", { name: /^(Enable|Disable)/ }).count()).toBe(0);
  });
});
