import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { openTab, signIn, visit, type Tab } from "./support.ts";

// The keys page past `[dashboard] max_keys_per_account`: the form says why no key was made.

setDefaultTimeout(30_000);

let gw: TestGateway;
let tab: Tab;
beforeAll(async () => {
  gw = await startTestGateway({ dashboard: { max_keys_per_account: 1 } });
  tab = await openTab("key-limit", gw.url);
});
afterAll(async () => {
  await tab?.close();
  await gw?.stop();
});

describe("the keys page at the account's key limit", () => {
  it("shows the 409 key_limit message under the form, and no new key", async () => {
    const { page } = tab;
    await signIn(page, gw.url, "register", "limit@example.test", "correct horse battery");
    await visit(page, gw.url, "keys", "Keys");
    await page.getByRole("button", { name: "New key" }).click();
    const form = page.getByRole("form", { name: "Create a key" });
    await form.getByLabel("Name").fill("first");
    await form.getByRole("button", { name: "Create key" }).click();
    await page.getByTestId("new-key").waitFor();

    await page.getByRole("button", { name: "New key" }).click();
    await form.getByLabel("Name").fill("second");
    await form.getByRole("button", { name: "Create key" }).click();
    const alert = page.getByRole("alert");
    await alert.waitFor();
    expect(await alert.textContent()).toContain("already has 1 key that is not revoked, the most it may have. Revoke a key it no longer uses");
    await tab.shot("refused");
    expect(await page.getByRole("row").filter({ hasText: "second" }).count()).toBe(0);
    // The refusal is the one problem the page met (Chromium logs the 409 to its console too).
    expect(tab.problems()).toEqual([expect.stringMatching(/^HTTP 409: POST .*\/api\/keys$/), expect.stringContaining("status of 409")]);
  });

  it("names the refused call, its HTTP status and request id as the failure panel does, and keeps what was typed", async () => {
    const { page } = tab;
    const alert = page.getByRole("alert");
    expect(await alert.locator("p").first().textContent()).toStartWith("POST /api/keys failed (HTTP 409): This account already has 1 key");
    expect(await alert.getByTestId("failed-request-id").textContent()).toMatch(/^gw_\w+$/);
    expect(await alert.textContent()).toContain("(quote it to the operator)");
    expect(await page.getByRole("form", { name: "Create a key" }).getByLabel("Name").inputValue()).toBe("second");
  });
});
