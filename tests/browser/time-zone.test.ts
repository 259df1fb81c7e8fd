import { afterAll, afterEach, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { openTab, signIn, visit, type Tab } from "./support.ts";

// A holder whose browser is not in UTC: the pages' days are UTC days (the chart, the ledger's charges,
// the date filters), their times the browser's own, so each time names its zone.

setDefaultTimeout(30_000);

let gw: TestGateway;
let tab: Tab;

beforeAll(async () => {
  gw = await startTestGateway();
  tab = await openTab("time-zone", gw.url, { timezoneId: "America/Los_Angeles" });
});

afterAll(async () => {
  await tab?.close();
  await gw?.stop();
});

afterEach(() => {
  expect(tab.problems()).toEqual([]);
});

describe("times in a browser outside UTC", () => {
  it("names the browser's time zone beside each time, so it is not read as the UTC day's", async () => {
    const { page } = tab;
    await signIn(page, gw.url, "register", "tz@example.test", "correct horse battery");
    await visit(page, gw.url, "usage", "Usage");
    const ledger = page.locator("table").filter({ has: page.locator("caption", { hasText: "Ledger" }) });
    const time = ledger.locator("tbody tr").first().locator("td").first();
    await time.waitFor();
    // Pacific Standard Time in winter, Daylight in summer.
    expect(await time.textContent()).toMatch(/ P[SD]T$/);
    await tab.shot("usage");
  });
});
