import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { openTab, visit, type Tab } from "./support.ts";

// The dashboard page's Content-Security-Policy in a real browser (docs/dashboard.md#the-pages): markup
// that reached the page (a stored name or note written as HTML by some future view) runs nothing.

setDefaultTimeout(30_000);

let gw: TestGateway;
let tab: Tab;

beforeAll(async () => {
  gw = await startTestGateway();
  tab = await openTab("page-policy", gw.url);
});

afterAll(async () => {
  await tab?.close();
  await gw?.stop();
});

/** Writes `markup` into the page as HTML, as an injection would, and says whether `window.pwned` got set. */
async function injected(markup: string): Promise<boolean> {
  const { page } = tab;
  await visit(page, gw.url, "login", "Log in");
  await page.evaluate(`
    document.querySelector("main").insertAdjacentHTML("beforeend", ${JSON.stringify(markup)});
    const s = document.createElement("script");
    s.textContent = "window.pwned = true";
    document.body.append(s);
  `);
  // An event handler runs once its image fails to load: give it the time.
  await page.waitForTimeout(300);
  return (await page.evaluate("window.pwned === true")) as boolean;
}

describe("the dashboard page's policy", () => {
  it("runs no script written into the page: inline script elements and event-handler attributes are refused", async () => {
    expect(await injected(`<img src="data:," onerror="window.pwned = true">`)).toBe(false);
    // The browser reports each refusal on the console: they are the point of this test.
    const problems = tab.problems();
    expect(problems.length).toBeGreaterThan(0);
    expect(problems.every((p) => p.includes("Content Security Policy"))).toBe(true);
  });
});
