import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { rmSync } from "node:fs";
import { startGateway, type RunningGateway } from "../../src/server.ts";
import { freePort } from "../support/cli.ts";
import { testConfig } from "../support/gateway.ts";
import { startSmtpServer, type ReceivedMail, type SmtpServer } from "../support/smtp-server.ts";
import { openTab, signIn, visit, type Tab } from "./support.ts";

// A forgotten password and a change of address in a real browser under [email]
// (docs/dashboard.md#password-reset, #change-of-email): the login page's "Forgot password?", the
// emailed link's page (its token in the fragment) and the account page's Change email.

setDefaultTimeout(60_000);

let smtp: SmtpServer;
let gw: RunningGateway;
let dir: string;
let tab: Tab;

beforeAll(async () => {
  smtp = startSmtpServer();
  const port = freePort();
  const made = testConfig({
    server: { port, public_url: `http://127.0.0.1:${port}` },
    email: { smtp_url: smtp.url(), from: "Gateway <gateway@test.local>" },
  });
  dir = made.dir;
  gw = startGateway(made.config, { port, quiet: true });
  tab = await openTab("password-reset", gw.url);
});

afterAll(async () => {
  await tab?.close();
  await gw?.stop();
  smtp?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The newest mail to `to`, waited for. */
async function mailTo(to: string, from: number): Promise<ReceivedMail> {
  for (let i = 0; i < 500; i++) {
    const mail = smtp.mails.slice(from).find((m) => m.to.includes(to));
    if (mail) return mail;
    await Bun.sleep(20);
  }
  throw new Error(`no mail to ${to}`);
}

const linkIn = (mail: ReceivedMail, route: string) => new RegExp(`(http://127\\.0\\.0\\.1:\\d+/#/${route}\\?token=[A-Za-z0-9_-]+)`).exec(mail.text)![1]!;

/** Registers `email` through the page and opens its verification link: a verified holder, logged in. */
async function verifiedHolder(email: string, password: string): Promise<void> {
  const { page } = tab;
  const before = smtp.mails.length;
  await signIn(page, gw.url, "register", email, password);
  const token = /verify\?token=([A-Za-z0-9_-]+)/.exec((await mailTo(email, before)).text)![1]!;
  const res = await fetch(`${gw.url}/api/verify`, { method: "POST", headers: { origin: gw.url, "content-type": "application/json" }, body: JSON.stringify({ token }) });
  expect(res.status).toBe(200);
}

describe("a forgotten password", () => {
  it("is reset from the login page's link through the emailed page, which logs in with the new one", async () => {
    const { page } = tab;
    await verifiedHolder("forgetful@example.test", "correct horse battery");
    await page.getByRole("button", { name: "Log out" }).click();
    await page.getByRole("heading", { level: 1, name: "Log in" }).waitFor();
    await page.getByRole("link", { name: "Forgot password?" }).click();
    await page.getByRole("heading", { level: 1, name: "Forgot password" }).waitFor();
    const before = smtp.mails.length;
    await page.getByLabel("Email").fill("forgetful@example.test");
    await page.getByRole("button", { name: "Send a reset link" }).click();
    await page.getByText("If an account has this address").waitFor();
    await tab.shot("forgot-sent");
    const link = linkIn(await mailTo("forgetful@example.test", before), "reset");
    await page.goto(link);
    await page.getByRole("heading", { level: 1, name: "Choose a new password" }).waitFor();
    await page.getByLabel("New password").fill("a brand new passphrase");
    await page.getByRole("button", { name: "Set the new password" }).click();
    await page.getByText("Password changed.").waitFor();
    // The token leaves the address bar and the history once used.
    expect(page.url()).not.toContain("token");
    await tab.shot("reset-done");
    await signIn(page, gw.url, "login", "forgetful@example.test", "a brand new passphrase");
    expect(tab.problems()).toEqual([]);
  });
});

describe("a change of address", () => {
  it("is asked on the account page and made by the new address's link", async () => {
    const { page } = tab;
    await verifiedHolder("old-address@example.test", "correct horse battery");
    await visit(page, gw.url, "account", "Account");
    const before = smtp.mails.length;
    await page.getByLabel("New email").fill("new-address@example.test");
    await page.getByRole("form", { name: "Change email" }).getByLabel("Current password").fill("correct horse battery");
    await page.getByRole("button", { name: "Change email" }).click();
    await page.getByText("A confirmation link was sent to new-address@example.test").waitFor();
    await tab.shot("email-change-sent");
    await page.goto(linkIn(await mailTo("new-address@example.test", before), "confirm-email"));
    await page.getByRole("button", { name: "Confirm my new address" }).click();
    await page.getByText("Your account's address is now new-address@example.test.").waitFor();
    expect(page.url()).not.toContain("token");
    await page.getByRole("link", { name: "Open the dashboard" }).click();
    await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
    await page.getByText("new-address@example.test").first().waitFor();
    expect((await mailTo("old-address@example.test", before)).text).toContain("changed from old-address@example.test");
    expect(tab.problems()).toEqual([]);
  });
});
