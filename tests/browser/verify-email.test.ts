import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { rmSync } from "node:fs";
import { startGateway, type RunningGateway } from "../../src/server.ts";
import { freePort } from "../support/cli.ts";
import { testConfig } from "../support/gateway.ts";
import { startSmtpServer, type SmtpServer } from "../support/smtp-server.ts";
import { openTab, signIn, textOf, type Tab } from "./support.ts";

// Address verification under [email] in a real browser (docs/dashboard.md#address-verification): the
// new account says "verify your address" and has no credit; the emailed link opens a page whose button
// grants the starting credit.

setDefaultTimeout(40_000);

let smtp: SmtpServer;
let gw: RunningGateway;
let dir: string;
let tab: Tab;

beforeAll(async () => {
  smtp = startSmtpServer();
  const port = freePort();
  const url = `http://127.0.0.1:${port}`;
  const made = testConfig({
    server: { port, public_url: url },
    email: { smtp_url: smtp.url(), from: "Gateway <gateway@test.local>" },
    dashboard: { starting_credit_usd: 1 },
  });
  dir = made.dir;
  gw = startGateway(made.config, { port, quiet: true });
  tab = await openTab("verify-email", gw.url);
});

afterAll(async () => {
  await tab?.close();
  await gw?.stop();
  smtp?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("verifying the address of a new account", () => {
  it("shows the notice until the emailed link's button is pressed, then the starting credit", async () => {
    const { page } = tab;
    await signIn(page, gw.url, "register", "new@example.test", "correct horse battery");
    expect(await page.getByTestId("verify-banner").textContent()).toContain("Verify your address");
    expect(await textOf(page, "balance", /\$/)).toBe("$0.00");
    await tab.shot("unverified");
    const [mail] = await smtp.waitFor(1);
    const link = /(http:\/\/127\.0\.0\.1:\d+\/verify\?token=[A-Za-z0-9_-]+)/.exec(mail!.text)![1]!;
    await page.goto(link);
    await page.getByRole("button", { name: "Verify my address" }).click();
    await page.getByText("Address verified: $1.00 of starting credit added.").waitFor();
    expect(new URL(page.url()).search).toBe("");
    await tab.shot("verified");
    await page.getByRole("link", { name: "Open the dashboard" }).click();
    await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
    expect(await textOf(page, "balance", /\$1/)).toBe("$1.00");
    expect(await page.getByTestId("verify-banner").count()).toBe(0);
    expect(tab.problems()).toEqual([]);
  });
});
