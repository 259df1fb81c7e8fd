import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import OpenAI from "openai";
import { Browser as ApiBrowser } from "../api/support.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { openTab, signIn, type Tab } from "./support.ts";

// A walk through every page of the dashboard on a desktop and on a 390 px phone, as a visitor, an
// account holder and an admin: no page logs a console error or a refused request, none scrolls
// sideways, and each leaves a screenshot (walk-<who>-<screen>-<page>.png) in tests/browser/screenshots/.

setDefaultTimeout(90_000);

let gw: TestGateway;
let tab: Tab;
const PASSWORD = "correct horse battery";
const HOLDER = "walker@example.test";
const ADMIN = "walk-admin@example.test";

const SCREENS = { desktop: { width: 1280, height: 900 }, phone: { width: 390, height: 844 } } as const;
type Screen = keyof typeof SCREENS;

interface Stop {
  name: string;
  /** Opens the page; resolves once its heading is there. */
  open(): Promise<void>;
}

const heading = (name: string) => tab.page.getByRole("heading", { level: 1, name }).waitFor();
const hash = (route: string, title: string): Stop => ({
  name: route || "overview",
  async open() {
    await tab.page.goto(`${gw.url}/#/${route}`);
    await heading(title);
  },
});

const VISITOR: Stop[] = [
  hash("login", "Log in"),
  hash("register", "Register"),
  {
    name: "verify",
    async open() {
      await tab.page.goto(`${gw.url}/verify?token=walk-token`);
      await heading("Verify your address");
    },
  },
];

const HOLDER_PAGES: Stop[] = [
  hash("", "Overview"),
  hash("keys", "Keys"),
  hash("usage", "Usage"),
  {
    name: "request-detail",
    async open() {
      await tab.page.goto(`${gw.url}/#/usage`);
      await heading("Usage");
      await tab.page.getByRole("button", { name: /^Details of / }).first().click();
      await tab.page.getByRole("region", { name: "Request detail" }).waitFor();
    },
  },
  hash("models", "Models and prices"),
  hash("topup", "Top up"),
  hash("account", "Account"),
];

const ADMIN_PAGES: Stop[] = [...HOLDER_PAGES, hash("admin", "Admin")];

/** Visits each stop on `screen`: what went wrong on each, and how wide the document grew. */
async function walk(who: string, screen: Screen, stops: Stop[]): Promise<{ page: string; problems: string[]; width: number }[]> {
  const { page } = tab;
  await page.setViewportSize(SCREENS[screen]);
  const seen = [];
  for (const stop of stops) {
    // Leave the last page (loaded, nothing in flight) first: the same address again would be no
    // navigation, and each page is loaded whole, as someone opening it would.
    await page.goto("about:blank");
    await stop.open();
    // Loaded: no spinner left and nothing busy (the requests, the ledger and the chart load after the heading).
    await page.waitForFunction("!document.querySelector('#view .loading, #view [aria-busy]') && !document.getElementById('view').hasAttribute('aria-busy')");
    const width = (await page.evaluate("document.scrollingElement.scrollWidth")) as number;
    await tab.shot(`${who}-${screen}-${stop.name}`);
    seen.push({ page: stop.name, problems: tab.problems(), width });
  }
  return seen;
}

const clean = (rows: { page: string }[], screen: Screen) => rows.map((r) => ({ page: r.page, problems: [], width: SCREENS[screen].width }));
/** The document is no wider than the screen: `width` is reported as the screen's when it fits. */
const fitted = (rows: { page: string; problems: string[]; width: number }[], screen: Screen) =>
  rows.map((r) => ({ ...r, width: r.width <= SCREENS[screen].width ? SCREENS[screen].width : r.width }));

beforeAll(async () => {
  gw = await startTestGateway();
  tab = await openTab("walk", gw.url);
  // Each has a key and one request, so the lists, the chart and a request's detail have content.
  for (const email of [HOLDER, ADMIN]) {
    const b = new ApiBrowser(gw.url);
    const id = ((await (await b.register(email, PASSWORD)).res.json()) as { id: number }).id;
    const key = ((await (await b.call("POST", "/api/keys", { name: "walk", rpm: 10 })).json()) as { key: string }).key;
    await new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 }).chat.completions.create({ model: "demo", max_tokens: 8, messages: [{ role: "user", content: "Hi" }] });
    if (email === ADMIN) await gw.services.accounts.setAdmin(id, true);
  }
});

afterAll(async () => {
  await tab?.close();
  await gw?.stop();
});

describe("a walk through every page of the dashboard", () => {
  for (const screen of ["desktop", "phone"] as const) {
    it(`shows a visitor's pages on a ${screen} without a console error or sideways scrolling`, async () => {
      const rows = await walk("visitor", screen, VISITOR);
      expect(fitted(rows, screen)).toEqual(clean(rows, screen));
    });

    it(`shows an account holder's pages on a ${screen} without a console error or sideways scrolling`, async () => {
      await tab.page.setViewportSize(SCREENS[screen]);
      await signIn(tab.page, gw.url, "login", HOLDER, PASSWORD);
      const rows = await walk("holder", screen, HOLDER_PAGES);
      expect(fitted(rows, screen)).toEqual(clean(rows, screen));
      await logOut();
    });

    it(`shows an admin's pages on a ${screen}, the admin page too, without a console error or sideways scrolling`, async () => {
      await tab.page.setViewportSize(SCREENS[screen]);
      await signIn(tab.page, gw.url, "login", ADMIN, PASSWORD);
      const rows = await walk("admin", screen, ADMIN_PAGES);
      expect(fitted(rows, screen)).toEqual(clean(rows, screen));
      await logOut();
    });
  }
});

async function logOut(): Promise<void> {
  await tab.page.getByRole("button", { name: "Log out", exact: true }).click();
  await heading("Log in");
  expect(tab.problems()).toEqual([]);
}
