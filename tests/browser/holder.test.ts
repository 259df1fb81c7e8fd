import { afterAll, afterEach, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import OpenAI from "openai";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { openTab, signIn, textOf, usdIn, visit, type Tab } from "./support.ts";

// An account holder's day in a real browser: register, make a restricted key, spend with it through
// the openai SDK, find the request in usage, edit the key, revoke it. The steps share one page and run in order.

// A timed-out test would have its browser killed under the next one: a browser step gets room.
setDefaultTimeout(30_000);

let gw: TestGateway;
let tab: Tab;
let key = "";
let requestId = "";
let costUsd = 0;

beforeAll(async () => {
  gw = await startTestGateway();
  tab = await openTab("holder", gw.url);
});

afterAll(async () => {
  await tab?.close();
  await gw?.stop();
});

afterEach(() => {
  expect(tab.problems()).toEqual([]);
});


describe("the account holder's dashboard", () => {
  it("registers with email and password and shows the starting 1 USD", async () => {
    const { page } = tab;
    await visit(page, gw.url, "register", "Register");
    await tab.shot("register");
    await signIn(page, gw.url, "register", "ada@example.test", "correct horse battery");
    expect(await textOf(page, "balance", /\$/)).toBe("$1.00");
    expect(await page.getByTestId("spendable").textContent()).toBe("$1.00");
    await tab.shot("overview");
  });

  it("creates a key restricted to the demo model and copies the key shown once", async () => {
    const { page } = tab;
    await visit(page, gw.url, "keys", "Keys");
    await page.getByRole("button", { name: "New key" }).click();
    const form = page.getByRole("form", { name: "Create a key" });
    await form.getByLabel("Name").fill("laptop");
    await form.getByLabel("Quota (USD)").fill("0.5");
    await form.getByLabel("Budget (USD)").fill("0.25");
    await form.getByLabel("Budget resets").selectOption("week");
    await form.getByRole("checkbox", { name: /demo-text-1/ }).check();
    await form.getByLabel("IP allow-list").fill("127.0.0.1, ::1");
    await form.getByLabel("Requests per minute").fill("15");
    await form.getByRole("button", { name: "Create key" }).click();
    key = (await page.getByTestId("new-key").textContent()) ?? "";
    expect(key).toMatch(/^gk_sk_/);
    await page.getByRole("button", { name: "Copy key to the clipboard" }).click();
    await page.getByRole("button", { name: "Copy key to the clipboard" }).filter({ hasText: "Copied" }).waitFor();
    // A string, evaluated in the page: the tests are typed without the DOM.
    expect(await page.evaluate("navigator.clipboard.readText()")).toBe(key);
    const row = page.getByRole("row").filter({ hasText: "laptop" });
    expect(await row.textContent()).toContain("models: demo-text-1; IPs: 127.0.0.1, ::1; 15 rpm");
    expect(await row.textContent()).toContain("$0.00 / $0.50");
    expect(await row.textContent()).toContain("$0.00 / $0.25 this week");
    await tab.shot("keys");
  });

  it("lets the copied key buy a completion of the demo model through the openai SDK", async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
    const { data, response } = await client.chat.completions.create({ model: "demo", max_tokens: 20, messages: [{ role: "user", content: "Hello" }] }).withResponse();
    requestId = response.headers.get("x-gateway-request-id") ?? "";
    costUsd = Number((data.usage as unknown as { cost_usd: number }).cost_usd);
    expect(requestId).not.toBe("");
    expect(costUsd).toBeGreaterThan(0);
  });

  it("shows that request in usage with its request id and cost, and the balance gone down by it", async () => {
    const { page } = tab;
    await visit(page, gw.url, "usage", "Usage");
    const row = page.getByRole("row").filter({ hasText: requestId });
    await row.waitFor();
    const text = (await row.textContent()) ?? "";
    expect(text).toContain("demo-text-1");
    expect(text).toContain(`$${costUsd}`);
    await page.getByRole("row").filter({ hasText: "Starting credit" }).waitFor();
    await page.getByTestId("spend-chart").locator("svg rect").first().waitFor();
    await tab.shot("usage");
    await visit(page, gw.url, "", "Overview");
    expect(usdIn(await textOf(page, "balance", /\$/))).toBeCloseTo(1 - costUsd, 9);
  });

  it("downloads the ledger as CSV from the usage page: the starting credit and the day's charge", async () => {
    const { page } = tab;
    await visit(page, gw.url, "usage", "Usage");
    const [file] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name: "Export the ledger as CSV" }).click()]);
    expect(file.suggestedFilename()).toBe("ledger.csv");
    const lines = (await Bun.file((await file.path())!).text()).trimEnd().split("\r\n");
    expect(lines[0]).toBe("created_at,kind,day,count,amount_usd,note,external_ref");
    expect(lines.slice(1).map((l) => l.split(",").slice(1, 5).join(","))).toEqual([
      `charges,${new Date().toISOString().slice(0, 10)},1,-${costUsd}`,
      "registration_credit,,,1",
    ]);
  });

  it("shows prices and client snippets filled in with the key's prefix", async () => {
    const { page } = tab;
    await visit(page, gw.url, "models", "Models and prices");
    await page.getByRole("row").filter({ hasText: "demo-text-1" }).waitFor();
    const openai = (await page.getByLabel("OpenAI SDK (TypeScript)", { exact: true }).textContent()) ?? "";
    expect(openai).toContain(`baseURL: "${gw.url}/v1"`);
    expect(openai).toContain(key.slice(0, 12));
    expect(await page.getByLabel("Anthropic SDK (TypeScript), no /v1", { exact: true }).textContent()).toContain(`baseURL: "${gw.url}"`);
    await tab.shot("models");
  });

  it("edits the key's restrictions: the list shows the new rpm and the server enforces it", async () => {
    const { page } = tab;
    await visit(page, gw.url, "keys", "Keys");
    await page.getByRole("row").filter({ hasText: "laptop" }).getByRole("button", { name: "Edit" }).click();
    const form = page.getByRole("form", { name: /^Edit key gk_sk_/ });
    await form.getByLabel("Requests per minute").fill("1");
    await form.getByRole("button", { name: "Save" }).click();
    await page.getByRole("row").filter({ hasText: "laptop" }).filter({ hasText: "; 1 rpm" }).waitFor();
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
    const ask = () => client.chat.completions.create({ model: "demo", max_tokens: 20, messages: [{ role: "user", content: "Hello" }] });
    await ask();
    expect(await ask().catch((e: unknown) => e)).toBeInstanceOf(OpenAI.RateLimitError);
  });

  it("refuses the key's next call once it is revoked", async () => {
    const { page } = tab;
    await visit(page, gw.url, "keys", "Keys");
    await page.getByRole("button", { name: "Revoke" }).click();
    await page.getByRole("button", { name: /^Confirm: revoke/ }).click();
    await page.getByRole("row").filter({ hasText: "laptop" }).filter({ hasText: "revoked" }).waitFor();
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
    const refused = await client.chat.completions.create({ model: "demo", max_tokens: 20, messages: [{ role: "user", content: "Hello" }] }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((refused as InstanceType<typeof OpenAI.PermissionDeniedError>).code).toBe("inactive");
  });

  it("says without Stripe that the operator credits balances", async () => {
    const { page } = tab;
    await visit(page, gw.url, "topup", "Top up");
    expect(await page.getByTestId("payments-off").textContent()).toContain("the operator credits balances");
    await tab.shot("topup");
  });

  it("changes the password and logs out everywhere", async () => {
    const { page } = tab;
    await visit(page, gw.url, "account", "Account");
    await tab.shot("account");
    await page.getByRole("form", { name: "Change password" }).getByLabel("Current password").fill("correct horse battery");
    await page.getByRole("form", { name: "Change password" }).getByLabel("New password").fill("staple horse battery");
    await page.getByRole("button", { name: "Change password" }).click();
    await page.getByText("Password changed.").waitFor();
    await page.getByRole("button", { name: "Log out everywhere" }).click();
    await page.getByRole("heading", { level: 1, name: "Log in" }).waitFor();
    await signIn(page, gw.url, "login", "ada@example.test", "staple horse battery");
  });

  it("logs in with the keyboard alone: the heading takes the focus, Tab walks the labelled fields, Enter submits", async () => {
    const { page } = tab;
    await page.getByRole("button", { name: "Log out" }).click();
    await page.getByRole("heading", { level: 1, name: "Log in" }).waitFor();
    expect(await page.evaluate("document.activeElement.tagName")).toBe("H1");
    await page.keyboard.press("Tab");
    await page.keyboard.type("ada@example.test");
    await page.keyboard.press("Tab");
    await page.keyboard.type("staple horse battery");
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
  });

  it("fits a phone's screen: no view is wider than 390 pixels", async () => {
    const { page } = tab;
    await page.setViewportSize({ width: 390, height: 844 });
    for (const [route, heading] of [["", "Overview"], ["keys", "Keys"], ["usage", "Usage"], ["models", "Models and prices"], ["topup", "Top up"], ["account", "Account"]] as const) {
      await visit(page, gw.url, route, heading);
      expect({ route, width: await page.evaluate("document.documentElement.scrollWidth") }).toEqual({ route, width: 390 });
    }
    await tab.shot("phone");
  });
});
