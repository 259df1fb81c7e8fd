import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { openTab, signIn, textOf, type Tab } from "./support.ts";

// A registration past the day's ceiling on starting credits (docs/dashboard.md#the-daily-ceiling-on-starting-credits),
// in a real browser: the account opens at 0 and the overview says why.

setDefaultTimeout(30_000);

let gw: TestGateway;
let tab: Tab;

beforeAll(async () => {
  gw = await startTestGateway({ dashboard: { starting_credit_usd: 1, starting_credit_daily_usd: 0 } });
  tab = await openTab("starting-credit", gw.url);
});

afterAll(async () => {
  await tab?.close();
  await gw?.stop();
});

describe("registering once the day's starting credits are given out", () => {
  it("opens the account at $0.00 and says the day's starting credits are given out", async () => {
    const { page } = tab;
    await signIn(page, gw.url, "register", "late@example.test", "correct horse battery");
    expect(await textOf(page, "balance", /\$/)).toBe("$0.00");
    expect(await page.getByTestId("starting-credit-limited").textContent()).toContain("starting credits for new accounts are all given out");
    expect(tab.problems()).toEqual([]);
  });
});
