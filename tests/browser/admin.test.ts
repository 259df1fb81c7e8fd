import { afterAll, afterEach, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { Browser as ApiBrowser } from "../api/support.ts";
import { gateway } from "../support/cli.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { openTab, signIn, visit, type Tab } from "./support.ts";

// The operator's side in a real browser: an account made admin with the CLI sees the admin page,
// opens another account's page from the search, credits and debits it with a note after a
// confirmation, disables and enables it, and pauses and resumes the product.

setDefaultTimeout(30_000);

let gw: TestGateway;
let tab: Tab;
let holderKey: string;
const ADMIN = "operator@example.test";
const HOLDER = "holder@example.test";
/** Holds 10.99 USD, the balance an admin once debited 100 USD from and saw grow to 110.99 USD. */
const DEBTOR = "debtor@example.test";

beforeAll(async () => {
  gw = await startTestGateway();
  tab = await openTab("admin", gw.url);
  const holder = new ApiBrowser(gw.url);
  await holder.register(HOLDER);
  holderKey = ((await (await holder.call("POST", "/api/keys", { name: "app" })).json()) as { key: string }).key;
  await new ApiBrowser(gw.url).register(ADMIN, "admin password");
  const marked = await gateway(["account", "update", "--email", ADMIN, "--admin", "--db", gw.config.database]);
  expect(marked.code).toBe(0);
  await new ApiBrowser(gw.url).register(DEBTOR);
  expect((await gateway(["account", "credit", "--email", DEBTOR, "--usd", "9.99", "--db", gw.config.database])).code).toBe(0);
});

afterAll(async () => {
  await tab?.close();
  await gw?.stop();
});

afterEach(() => {
  expect(tab.problems()).toEqual([]);
});

describe("the admin page", () => {
  it("is in the navigation of an admin account", async () => {
    const { page } = tab;
    await signIn(page, gw.url, "login", ADMIN, "admin password");
    await page.getByRole("navigation").getByRole("link", { name: "Admin" }).click();
    await page.getByRole("heading", { level: 1, name: "Admin" }).waitFor();
    await page.getByRole("table", { name: "Route health" }).waitFor();
    await tab.shot("admin");
  });

  it("credits an account after a dialog that states the amount and the direction: balance, operator_credit, account_credited", async () => {
    await openAccount(HOLDER);
    expect(await balanceCell(HOLDER).textContent()).toBe("$1.00");
    const dialog = await review(HOLDER, "Credit", "2.5", "goodwill");
    expect(await dialog.textContent()).toContain(`Credit 2.50 USD to ${HOLDER}? Note: goodwill`);
    await tab.shot("admin-confirm-credit");
    await dialog.getByRole("button", { name: "Credit 2.50 USD" }).click();
    await balanceCell(HOLDER).filter({ hasText: "$3.50" }).waitFor();
    expect(moneyOf(HOLDER)).toEqual([{ kind: "operator_credit", amount_nano: 2_500_000_000, note: "goodwill" }]);
    expect(auditOf(HOLDER)).toEqual([{ action: "account_credited", actor: ADMIN, detail: "2.5 USD: goodwill" }]);
  });

  it("debits an account after a dialog that states the amount and the direction: balance, operator_debit, account_debited", async () => {
    const dialog = await review(HOLDER, "Debit", "1.25", "refund reversed");
    expect(await dialog.textContent()).toContain(`Debit 1.25 USD from ${HOLDER}? Note: refund reversed`);
    await dialog.getByRole("button", { name: "Debit 1.25 USD" }).click();
    await balanceCell(HOLDER).filter({ hasText: "$2.25" }).waitFor();
    expect(moneyOf(HOLDER).at(-1)).toEqual({ kind: "operator_debit", amount_nano: -1_250_000_000, note: "refund reversed" });
    expect(auditOf(HOLDER).at(-1)).toEqual({ action: "account_debited", actor: ADMIN, detail: "1.25 USD: refund reversed" });
  });

  it("moves no money when the dialog is cancelled (Cancel has the focus, then Review again)", async () => {
    const entries = moneyOf(HOLDER).length;
    const dialog = await review(HOLDER, "Debit", "1", "second thoughts");
    const cancel = dialog.getByRole("button", { name: "Cancel" });
    expect(await tab.page.evaluate("document.activeElement.textContent")).toBe("Cancel");
    await cancel.click();
    await tab.page.getByText("Cancelled: nothing changed.").waitFor();
    expect(await tab.page.evaluate("document.activeElement.textContent")).toBe("Review");
    expect(await tab.page.getByRole("alertdialog").count()).toBe(0);
    expect(await balanceCell(HOLDER).textContent()).toBe("$2.25");
    expect(moneyOf(HOLDER).length).toBe(entries);
  });

  it("asks for a direction and sends nothing when none is chosen", async () => {
    await tab.page.reload();
    const form = moneyForm(HOLDER);
    const entries = moneyOf(HOLDER).length;
    await form.getByLabel("USD").fill("3");
    await form.getByLabel("Note").fill("which way?");
    await form.getByRole("button", { name: "Review" }).click();
    expect(await form.locator('input[name="op"]:invalid').count()).toBe(2);
    expect(await tab.page.getByRole("alertdialog").count()).toBe(0);
    expect(moneyOf(HOLDER).length).toBe(entries);
  });

  it("refuses a debit beyond the balance (100 USD of 10.99 USD): the page says why and the balance stays", async () => {
    await openAccount(DEBTOR);
    expect(await balanceCell(DEBTOR).textContent()).toBe("$10.99");
    const dialog = await review(DEBTOR, "Debit", "100", "too much");
    await dialog.getByRole("button", { name: "Debit 100.00 USD" }).click();
    await tab.page.getByRole("alert").filter({ hasText: "a debit of 100 USD would take the balance of 10.99 USD below zero" }).waitFor();
    // The refusal is the answer this test wants: the page reports it, as it does every 400.
    expect(tab.problems()).toEqual([expect.stringMatching(/^HTTP 400: POST .*\/debit$/), expect.stringContaining("status of 400")]);
    expect(await balanceCell(DEBTOR).textContent()).toBe("$10.99");
    expect(moneyOf(DEBTOR)).toEqual([{ kind: "operator_credit", amount_nano: 9_990_000_000, note: null }]);
    expect(auditOf(DEBTOR)).toEqual([]);
  });

  it("credits once when the confirming button is clicked twice in a row", async () => {
    const entries = moneyOf(DEBTOR).length;
    const dialog = await review(DEBTOR, "Credit", "1", "double click");
    await dialog.getByRole("button", { name: "Credit 1.00 USD" }).dblclick();
    await balanceCell(DEBTOR).filter({ hasText: "$11.99" }).waitFor();
    await tab.page.reload();
    await balanceCell(DEBTOR).filter({ hasText: "$11.99" }).waitFor();
    expect(moneyOf(DEBTOR).length).toBe(entries + 1);
    expect(booksOf(DEBTOR)).toEqual({ balance: 11_990_000_000, ledger: 11_990_000_000 });
  });

  it("credits once when the same credit is sent again after its first answer was lost", async () => {
    const { page } = tab;
    const entries = moneyOf(DEBTOR).length;
    const keys: (string | null)[] = [];
    // The first credit reaches the gateway and moves the money, but its answer never reaches the page.
    await page.route("**/api/admin/accounts/*/credit", async (route) => {
      keys.push(route.request().headers()["idempotency-key"] ?? null);
      if (keys.length === 1) {
        await route.fetch();
        return route.abort("connectionreset");
      }
      return route.continue();
    });
    try {
      await (await review(DEBTOR, "Credit", "0.5", "lost answer")).getByRole("button", { name: "Credit 0.50 USD" }).click();
      await page.getByRole("alert").filter({ hasText: "The gateway did not answer" }).waitFor();
      await (await review(DEBTOR, "Credit", "0.5", "lost answer")).getByRole("button", { name: "Credit 0.50 USD" }).click();
      await balanceCell(DEBTOR).filter({ hasText: "$12.49" }).waitFor();
    } finally {
      await page.unroute("**/api/admin/accounts/*/credit");
    }
    // The aborted answer is what this test wants: the browser reports the failed fetch.
    tab.problems();
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^[0-9a-f]{32}$/);
    expect(keys[1]).toBe(keys[0]);
    expect(moneyOf(DEBTOR).length).toBe(entries + 1);
    expect(booksOf(DEBTOR)).toEqual({ balance: 12_490_000_000, ledger: 12_490_000_000 });
  });

  it("states an amount typed as 1e3 as 1,000.00 USD before it moves, and credits exactly that", async () => {
    const dialog = await review(DEBTOR, "Credit", "1e3", "exponent");
    expect(await dialog.textContent()).toContain(`Credit 1,000.00 USD to ${DEBTOR}? Note: exponent`);
    await dialog.getByRole("button", { name: "Credit 1,000.00 USD" }).click();
    await balanceCell(DEBTOR).filter({ hasText: "$1,012.49" }).waitFor();
    expect(moneyOf(DEBTOR).at(-1)).toEqual({ kind: "operator_credit", amount_nano: 1_000_000_000_000, note: "exponent" });
    expect(booksOf(DEBTOR)).toEqual({ balance: 1_012_490_000_000, ledger: 1_012_490_000_000 });
  });

  for (const usd of ["0", "-1", "0.001"]) {
    it(`sends nothing for ${usd} USD: the field is invalid and no dialog opens`, async () => {
      await tab.page.reload();
      const form = moneyForm(DEBTOR);
      const entries = moneyOf(DEBTOR).length;
      await form.getByRole("radio", { name: "Debit" }).check();
      await form.getByLabel("USD").fill(usd);
      await form.getByLabel("Note").fill("edge");
      await form.getByRole("button", { name: "Review" }).click();
      expect(await form.locator('input[name="usd"]:invalid').count()).toBe(1);
      expect(await tab.page.getByRole("alertdialog").count()).toBe(0);
      expect(moneyOf(DEBTOR).length).toBe(entries);
    });
  }

  it("debits the whole balance once when the confirming button is clicked twice, leaving $0.00", async () => {
    const dialog = await review(DEBTOR, "Debit", "1012.49", "close the account");
    await dialog.getByRole("button", { name: "Debit 1,012.49 USD" }).dblclick();
    await balanceCell(DEBTOR).filter({ hasText: "$0.00" }).waitFor();
    expect(moneyOf(DEBTOR).at(-1)).toEqual({ kind: "operator_debit", amount_nano: -1_012_490_000_000, note: "close the account" });
    expect(booksOf(DEBTOR)).toEqual({ balance: 0, ledger: 0 });
  });

  it("pauses the product (the next model request is 503 product_paused) and resumes it", async () => {
    const { page } = tab;
    await visit(page, gw.url, "admin", "Admin");
    await page.getByRole("button", { name: "Pause" }).click();
    await page.getByRole("button", { name: "Resume" }).waitFor();
    const paused = await chat(holderKey);
    expect(paused.status).toBe(503);
    expect(((await paused.json()) as { error: { code: string } }).error.code).toBe("product_paused");
    await page.getByRole("button", { name: "Resume" }).click();
    await page.getByRole("button", { name: "Pause" }).waitFor();
    expect((await chat(holderKey)).status).toBe(200);
    await page.getByRole("table", { name: "Audit" }).getByRole("row").filter({ hasText: "resume" }).first().waitFor();
  });

  it("disables an account (its key is refused with 403 inactive) and enables it again", async () => {
    const { page } = tab;
    await openAccount(HOLDER);
    const state = page.getByTestId("account-state");
    await page.getByRole("button", { name: `Disable ${HOLDER}` }).click();
    await state.filter({ hasText: "disabled" }).waitFor();
    const refused = await chat(holderKey);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("inactive");
    await page.getByRole("button", { name: "Enable" }).click();
    await page.getByRole("button", { name: `Disable ${HOLDER}` }).waitFor();
    expect((await chat(holderKey)).status).toBe(200);
  });

  it("offers no Disable on the admin's own account", async () => {
    await openAccount(ADMIN);
    await tab.page.getByRole("form", { name: `Credit or debit ${ADMIN}` }).waitFor();
    expect(await tab.page.getByRole("button", { name: /^Disable/ }).count()).toBe(0);
  });
});

/** Finds the account with the admin page's search and opens its page. */
async function openAccount(email: string) {
  const { page } = tab;
  await visit(page, gw.url, "admin", "Admin");
  await page.getByRole("search", { name: "Find accounts" }).getByLabel("Email or account id").fill(email);
  await page.getByRole("search", { name: "Find accounts" }).getByRole("button", { name: "Search" }).click();
  await page.getByRole("table", { name: "Accounts" }).getByRole("link", { name: email, exact: true }).click();
  await page.getByRole("heading", { level: 1, name: email }).waitFor();
}

/** The balance on the account's page (openAccount first). */
const balanceCell = (_email: string) => tab.page.getByRole("main").getByTestId(/^balance-/);
const moneyForm = (email: string) => tab.page.getByRole("form", { name: `Credit or debit ${email}` });

/** Fills an account's money form and presses Review: the confirmation dialog that opens. */
async function review(email: string, direction: "Credit" | "Debit", usd: string, note: string) {
  const form = moneyForm(email);
  await form.getByRole("radio", { name: direction }).check();
  await form.getByLabel("USD").fill(usd);
  await form.getByLabel("Note").fill(note);
  await form.getByRole("button", { name: "Review" }).click();
  const dialog = tab.page.getByRole("alertdialog");
  await dialog.waitFor();
  return dialog;
}

const sql = <T>(query: string, email: string) => gw.services.db.$client.query(query).all(email) as T[];
const moneyOf = (email: string) =>
  sql<{ kind: string; amount_nano: number; note: string | null }>(
    "SELECT l.kind, l.amount_nano, l.note FROM ledger_entries l JOIN accounts a ON a.id = l.account_id WHERE a.email = ? AND l.kind LIKE 'operator_%' ORDER BY l.id",
    email,
  );
/** The account's balance and its ledger's sum, which must agree. */
const booksOf = (email: string) =>
  sql<{ balance: number; ledger: number }>(
    "SELECT a.balance_nano AS balance, (SELECT coalesce(sum(amount_nano), 0) FROM ledger_entries WHERE account_id = a.id) AS ledger FROM accounts a WHERE a.email = ?",
    email,
  )[0];
const auditOf = (email: string) =>
  sql<{ action: string; actor: string; detail: string }>(
    "SELECT l.action, b.email AS actor, l.detail FROM audit_log l JOIN accounts t ON t.id = l.target_account_id JOIN accounts b ON b.id = l.actor_account_id WHERE t.email = ? ORDER BY l.id",
    email,
  );

function chat(key: string): Promise<Response> {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "demo", max_tokens: 20, messages: [{ role: "user", content: "Hello" }] }),
  });
}
