import { afterAll, afterEach, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { codeAt } from "../support/two-factor.ts";
import { openTab, signIn, visit, type Tab } from "./support.ts";

// Two-factor login in a real browser (docs/dashboard.md#two-factor-login): set up on the account
// page with the secret the page shows, the recovery codes shown once, the login's second step, and
// turning it off. The codes are computed as the holder's authenticator app would. The steps share one page and run in order.

setDefaultTimeout(30_000);

let gw: TestGateway;
let tab: Tab;
let secret = "";
let recovery: string[] = [];
const EMAIL = "grace@example.test";
const PASSWORD = "correct horse battery";

beforeAll(async () => {
  gw = await startTestGateway();
  tab = await openTab("two-factor", gw.url);
});

afterAll(async () => {
  await tab?.close();
  await gw?.stop();
});

afterEach(() => {
  expect(tab.problems()).toEqual([]);
});

async function logOut(): Promise<void> {
  await tab.page.getByRole("button", { name: "Log out", exact: true }).click();
  await tab.page.getByRole("heading", { level: 1, name: "Log in" }).waitFor();
}

/** The login form as far as its second step. */
async function passwordStep(): Promise<void> {
  const { page } = tab;
  await visit(page, gw.url, "login", "Log in");
  await page.getByLabel("Email").fill(EMAIL);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByTestId("second-step").waitFor();
}

describe("two-factor login in the dashboard", () => {
  it("sets it up on the account page and shows the recovery codes once", async () => {
    const { page } = tab;
    await signIn(page, gw.url, "register", EMAIL, PASSWORD);
    await visit(page, gw.url, "account", "Account");
    await page.getByRole("button", { name: "Set up two-factor login" }).click();
    secret = ((await page.locator('pre[aria-label="secret"]').textContent()) ?? "").trim();
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(await page.getByTestId("otpauth-link").getAttribute("href")).toContain(`secret=${secret}`);
    // The QR code is an SVG data: image, which the page's policy (img-src 'self' data:) shows.
    expect(await page.getByTestId("qr-code").evaluate((img) => (img as unknown as { complete: boolean; naturalWidth: number }).complete && (img as unknown as { naturalWidth: number }).naturalWidth > 0)).toBe(true);
    await tab.shot("setup");
    const form = page.getByRole("form", { name: "Enable two-factor login" });
    await form.getByLabel("Current password").fill(PASSWORD);
    await form.getByLabel("Code from the app").fill(await codeAt(secret, 0));
    await form.getByRole("button", { name: "Enable two-factor login" }).click();
    const codes = (await page.locator('pre[aria-label="recovery codes"]').textContent()) ?? "";
    recovery = codes.trim().split("\n");
    expect(recovery).toHaveLength(10);
    await tab.shot("recovery-codes");
    await page.getByRole("button", { name: "I have saved them" }).click();
    await page.getByRole("form", { name: "Disable two-factor login" }).waitFor();
    expect(await page.locator('pre[aria-label="recovery codes"]').count()).toBe(0);
  });

  it("asks for the code after the password, and the code logs in", async () => {
    const { page } = tab;
    await logOut();
    await passwordStep();
    await tab.shot("second-step");
    // The focus is on the code's field: the holder types it at once.
    expect(await page.evaluate("document.activeElement.name")).toBe("code");
    await page.keyboard.type(await codeAt(secret, 30));
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
  });

  it("takes a recovery code in place of the app's code", async () => {
    const { page } = tab;
    await logOut();
    await passwordStep();
    await page.getByLabel("Code", { exact: true }).fill(recovery[0]!);
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
  });

  it("shows on the admin page's accounts list that the account has it on", async () => {
    const { page } = tab;
    const id = (await gw.services.accounts.find(EMAIL))!.id;
    await gw.services.accounts.setAdmin(id, true);
    await visit(page, gw.url, "admin", "Admin");
    expect(await page.getByTestId(`two-factor-${id}`).textContent()).toBe("on");
  });

  it("turns it off with the password and a recovery code: the next login asks for the password only", async () => {
    const { page } = tab;
    await visit(page, gw.url, "account", "Account");
    const form = page.getByRole("form", { name: "Disable two-factor login" });
    await form.getByLabel("Current password").fill(PASSWORD);
    await form.getByLabel("Code", { exact: true }).fill(recovery[1]!);
    await form.getByRole("button", { name: "Disable two-factor login" }).click();
    await page.getByRole("button", { name: "Set up two-factor login" }).waitFor();
    await logOut();
    await signIn(page, gw.url, "login", EMAIL, PASSWORD);
  });
});
