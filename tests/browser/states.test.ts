import { afterAll, afterEach, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import OpenAI from "openai";
import { Browser as ApiBrowser } from "../api/support.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { openTab, signIn, visit, type Tab } from "./support.ts";

// What every view of the dashboard does around its data (src/dashboard/ui/main.ts, dom.ts): the
// loading state, the failure panel with its Retry, a visitor's first page without a refused call,
// "Copied" read out, the keys edited in their row, a revoked key's look, and a phone's tables.

setDefaultTimeout(30_000);

let gw: TestGateway;
let tab: Tab;
const EMAIL = "states@example.test";
const PASSWORD = "correct horse battery";

beforeAll(async () => {
  gw = await startTestGateway();
  tab = await openTab("states", gw.url);
});

afterAll(async () => {
  await tab?.close();
  await gw?.stop();
});

afterEach(() => {
  expect(tab.problems()).toEqual([]);
});

/** The page's evaluation of `js` (a string: the tests are typed without the DOM). */
const inPage = <T>(js: string) => tab.page.evaluate(js) as Promise<T>;

describe("the dashboard's states", () => {
  it("opens / for a visitor on the login page with no refused request", async () => {
    await tab.page.goto(`${gw.url}/`);
    await tab.page.getByRole("heading", { level: 1, name: "Log in" }).waitFor();
    // afterEach: no HTTP 401 (nor any other error) seen by the page.
  });

  it("tells a visitor who forgot the password on the login page that the operator sets a new one", async () => {
    await visit(tab.page, gw.url, "login", "Log in");
    expect(await tab.page.getByTestId("forgot-password").textContent()).toBe(
      "Forgot your password? The gateway sends no reset email: ask its operator to set a new one.",
    );
  });

  it("shows a busy spinner, read out, while a view's data loads", async () => {
    const { page } = tab;
    await signIn(page, gw.url, "register", EMAIL, PASSWORD);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    await page.route("**/api/keys", async (route) => {
      await held;
      await route.continue();
    });
    await page.goto(`${gw.url}/#/keys`);
    await page.getByRole("status").filter({ hasText: "Loading keys…" }).waitFor();
    expect(await inPage<string | null>(`document.getElementById("view").getAttribute("aria-busy")`)).toBe("true");
    release();
    await page.getByRole("heading", { level: 1, name: "Keys" }).waitFor();
    expect(await inPage<string | null>(`document.getElementById("view").getAttribute("aria-busy")`)).toBeNull();
    await page.unroute("**/api/keys");
  });

  it("says which call failed, with the server's message and request id, and Retry loads just that view", async () => {
    const { page } = tab;
    const envelope = { error: { type: "server_error", code: "database_unavailable", message: "The database is not answering.", request_id: "req_test123" } };
    await page.route("**/api/keys", (route) => route.fulfill({ status: 503, contentType: "application/json", body: JSON.stringify(envelope) }));
    // From another view: the same address again would be no navigation at all.
    await visit(page, gw.url, "account", "Account");
    await page.goto(`${gw.url}/#/keys`);
    const panel = page.getByRole("alert").filter({ hasText: "not loaded" });
    await panel.waitFor();
    expect(await panel.textContent()).toContain("GET /api/keys failed (HTTP 503): The database is not answering.");
    expect(await page.getByTestId("failed-request-id").textContent()).toBe("req_test123");
    // The shell stays: the navigation is there, only the view failed.
    await page.getByRole("navigation").getByRole("link", { name: "Usage" }).waitFor();
    await tab.shot("failed");
    expect(tab.problems().filter((p) => !p.includes("503"))).toEqual([]);
    await page.unroute("**/api/keys");
    await page.getByRole("button", { name: "Retry" }).click();
    await page.getByRole("heading", { level: 1, name: "Keys" }).waitFor();
  });

  it("reads out Copied when the new key is copied", async () => {
    const { page } = tab;
    await visit(page, gw.url, "keys", "Keys");
    await page.getByRole("button", { name: "New key" }).click();
    await page.getByRole("form", { name: "Create a key" }).getByLabel("Name").fill("laptop");
    await page.getByRole("button", { name: "Create key" }).click();
    await page.getByRole("button", { name: "Copy key to the clipboard" }).click();
    const region = page.locator("#announcer[aria-live=polite]");
    await region.filter({ hasText: "Copied: key" }).waitFor();
    await page.getByRole("button", { name: "Copy curl to the clipboard" }).click();
    await region.filter({ hasText: "Copied: curl" }).waitFor();
  });

  it("edits a key in its own row and puts the focus back on its Edit button", async () => {
    const { page } = tab;
    const row = page.getByRole("row").filter({ hasText: "laptop" });
    await row.getByRole("button", { name: "Edit key laptop" }).click();
    // The form is in the table, where the row was.
    const form = page.getByRole("table").getByRole("form", { name: /^Edit key gk_sk_/ });
    await form.getByLabel("Name").fill("desk");
    await form.getByLabel("Requests per minute").fill("5");
    await tab.shot("keys-inline-edit");
    await form.getByRole("button", { name: "Save" }).click();
    await page.getByRole("row").filter({ hasText: "desk" }).filter({ hasText: "5 rpm" }).waitFor();
    expect(await inPage<string | null>("document.activeElement.getAttribute('aria-label')")).toBe("Edit key desk");
    await page.locator("#announcer").filter({ hasText: "Key desk saved" }).waitFor();
  });

  it("shows a revoked key struck through and labelled revoked, with no Edit or Revoke", async () => {
    const { page } = tab;
    const row = page.getByRole("row").filter({ hasText: "desk" });
    await row.getByRole("button", { name: "Revoke" }).click();
    await row.getByRole("button", { name: /^Confirm: revoke/ }).click();
    const revoked = page.locator("tr.revoked").filter({ hasText: "desk" });
    await revoked.waitFor();
    expect(await revoked.locator(".badge").textContent()).toBe("revoked");
    expect(await inPage<string>(`getComputedStyle(document.querySelector("tr.revoked .was")).textDecorationLine`)).toBe("line-through");
    expect(await revoked.getByRole("button").allTextContents()).toEqual(["Hide"]);
    await tab.shot("keys-revoked");
    await revoked.getByRole("button", { name: "Hide" }).click();
    await page.getByRole("button", { name: "Show 1 hidden revoked key" }).click();
    await page.locator("tr.revoked").filter({ hasText: "desk" }).waitFor();
  });

  it("shows on a 390 px phone each request's status and cost, and each key's actions, without sideways scrolling", async () => {
    const { page } = tab;
    const key = ((await (await (await loggedIn()).call("POST", "/api/keys", { name: "phone" })).json()) as { key: string }).key;
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
    await client.chat.completions.create({ model: "demo", max_tokens: 8, messages: [{ role: "user", content: "Hi" }] });
    await page.setViewportSize({ width: 390, height: 844 });
    await visit(page, gw.url, "usage", "Usage");
    // The requests' table, not the chart's figures (folded under "The figures as a table").
    const request = page.locator("table.cards").filter({ has: page.locator("caption", { hasText: "Recent requests" }) }).locator("tbody tr").first();
    await request.waitFor();
    for (const label of ["Status", "Cost", "Request id"]) await inside390(request.locator(`td[data-label="${label}"]`));
    for (const label of ["Key", "Route", "Tokens in / out"]) expect(await request.locator(`td[data-label="${label}"]`).isVisible()).toBe(false);
    expect(await inPage<number>("document.scrollingElement.scrollWidth")).toBeLessThanOrEqual(390);
    await visit(page, gw.url, "keys", "Keys");
    const active = page.getByRole("row").filter({ hasText: "phone" });
    await inside390(active.getByRole("button", { name: "Edit key phone" }));
    await inside390(active.getByRole("button", { name: "Revoke" }));
    expect(await inPage<number>("document.scrollingElement.scrollWidth")).toBeLessThanOrEqual(390);
    // The row's editor fits too, and Escape gives the row back with the focus on its Edit button.
    await active.getByRole("button", { name: "Edit key phone" }).click();
    await page.getByRole("form", { name: /^Edit key gk_sk_/ }).getByLabel("Requests per minute").waitFor();
    expect(await inPage<number>("document.scrollingElement.scrollWidth")).toBeLessThanOrEqual(390);
    await tab.shot("phone-inline-edit");
    await page.keyboard.press("Escape");
    await active.getByRole("button", { name: "Edit key phone" }).waitFor();
    expect(await inPage<string | null>("document.activeElement.getAttribute('aria-label')")).toBe("Edit key phone");
    await page.setViewportSize({ width: 1100, height: 900 });
  });

  it("renames an expired key without touching its expiry", async () => {
    const { page } = tab;
    const made = (await (await (await loggedIn()).call("POST", "/api/keys", { name: "lapsed", expires_at: "2099-01-01T08:00:30Z" })).json()) as { id: number };
    const past = Date.now() - 3600_000;
    gw.services.db.$client.run("UPDATE api_keys SET expires_at = ? WHERE id = ?", [past, made.id]);
    // From another view: the keys page open already would not load again.
    await visit(page, gw.url, "", "Overview");
    await visit(page, gw.url, "keys", "Keys");
    const row = page.getByRole("row").filter({ hasText: "lapsed" });
    await row.getByRole("button", { name: "Edit key lapsed" }).click();
    const form = page.getByRole("table").getByRole("form", { name: /^Edit key gk_sk_/ });
    await form.getByLabel("Name").fill("lapsed-renamed");
    await form.getByRole("button", { name: "Save" }).click();
    await page.getByRole("row").filter({ hasText: "lapsed-renamed" }).filter({ hasText: "expired" }).waitFor();
    const stored = gw.services.db.$client.query("SELECT expires_at AS at FROM api_keys WHERE id = ?").get(made.id) as { at: number };
    expect(stored.at).toBe(past);
  });

  it("shows when each key was made in its row, beside its last use", async () => {
    const { page } = tab;
    const made = (await (await (await loggedIn()).call("POST", "/api/keys", { name: "dated" })).json()) as { created_at: string };
    await visit(page, gw.url, "", "Overview");
    await visit(page, gw.url, "keys", "Keys");
    const created = await inPage<string>(`new Date(${JSON.stringify(made.created_at)}).toLocaleString(undefined, { timeZoneName: "short" })`);
    const row = page.getByRole("row").filter({ hasText: "dated" });
    expect(await row.locator('td[data-label="Created"]').textContent()).toBe(created);
  });

  it("names a key made without a name by its prefix where it is shown once", async () => {
    const { page } = tab;
    await visit(page, gw.url, "keys", "Keys");
    await page.getByRole("button", { name: "New key" }).click();
    await page.getByRole("form", { name: "Create a key" }).getByRole("button", { name: "Create key" }).click();
    const prefix = ((await page.getByTestId("new-key").textContent()) ?? "").slice(0, 12);
    expect(prefix).toMatch(/^gk_sk_/);
    expect(await page.getByRole("region", { name: "Your new key" }).getByRole("heading", { level: 2 }).textContent()).toBe(`Key ${prefix} created`);
  });
});

/** An API client logged in as this file's holder (its own session, beside the page's). */
async function loggedIn(): Promise<ApiBrowser> {
  const b = new ApiBrowser(gw.url);
  const res = await b.call("POST", "/api/login", { email: EMAIL, password: PASSWORD });
  expect(res.status).toBe(200);
  return b;
}

/** The element is shown and lies wholly within the phone's 390 px. */
async function inside390(el: ReturnType<Tab["page"]["locator"]>): Promise<void> {
  await el.waitFor();
  const box = await el.boundingBox();
  expect({ shown: box !== null, left: (box?.x ?? -1) >= 0, right: (box?.x ?? 0) + (box?.width ?? 0) <= 390 }).toEqual({ shown: true, left: true, right: true });
}
