import { afterAll, afterEach, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { Browser } from "../api/support.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { postWithApiKey } from "../support/keyed.ts";
import { openTab, signIn, visit, type Tab } from "./support.ts";

// The usage page's two paged lists, the requests and the ledger, 50 rows a page: each has its own
// "Older" button, named after its list, and a row is shown once however many pages are read.

setDefaultTimeout(60_000);

let gw: TestGateway;
let tab: Tab;
const EMAIL = "pages@example.test";
const PASSWORD = "correct horse battery";

beforeAll(async () => {
  gw = await startTestGateway({ limits: { default_rpm: 1000 } });
  tab = await openTab("paging", gw.url);
});

afterAll(async () => {
  await tab?.close();
  await gw?.stop();
});

afterEach(() => {
  expect(tab.problems()).toEqual([]);
});

/** The rows of the table captioned `caption`. */
const rowsOf = (caption: string) => tab.page.locator("table").filter({ has: tab.page.locator("caption", { hasText: caption }) }).locator("tbody tr");

describe("the usage page's lists, 50 rows a page", () => {
  it("names each list's Older button after its list, and shows each row once", async () => {
    const { page } = tab;
    await signIn(page, gw.url, "register", EMAIL, PASSWORD);
    const b = new Browser(gw.url);
    await b.call("POST", "/api/login", { email: EMAIL, password: PASSWORD });
    const me = (await (await b.call("GET", "/api/me")).json()) as { id: number };
    const key = ((await (await b.call("POST", "/api/keys", {})).json()) as { key: string }).key;
    for (let i = 0; i < 55; i++) await postWithApiKey(gw, "/v1/chat/completions", { model: "demo", max_tokens: 4, messages: [{ role: "user", content: "hi" }] }, key);
    for (let i = 0; i < 52; i++) await gw.services.accounts.debit(me.id, 1000, `debit ${i}`);
    await visit(page, gw.url, "usage", "Usage");
    await rowsOf("Recent requests").nth(49).waitFor();
    await rowsOf("Ledger").nth(49).waitFor();
    await page.getByRole("button", { name: "Older requests" }).click();
    await rowsOf("Recent requests").nth(54).waitFor();
    await page.getByRole("button", { name: "Older ledger entries" }).click();
    // 52 debits, one day's charges, the starting credit.
    await rowsOf("Ledger").nth(53).waitFor();
    const ids = await rowsOf("Recent requests").locator("code").allTextContents();
    expect(new Set(ids).size).toBe(55);
    expect(await page.getByRole("button", { name: /^Older/ }).count()).toBe(0);
  });
});
