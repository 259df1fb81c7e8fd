import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";

// One headless Chromium per test file (Debian's, driven by playwright-core), one page reused by its
// tests. Every console error, uncaught exception, failed request and HTTP error answer the page sees
// is a problem: each test ends by asserting there were none.

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Screenshots of every page a run visits (git-ignored). */
export const SCREENSHOTS = join(import.meta.dir, "screenshots");

export interface Tab {
  page: Page;
  context: BrowserContext;
  /** What went wrong in the page since the last `problems()`; reading clears it. */
  problems(): string[];
  /** Saves a full-page screenshot as screenshots/<file>-<name>.png. */
  shot(name: string): Promise<void>;
  close(): Promise<void>;
}

/** `timezoneId` puts the browser in that time zone (an IANA name); by default the machine's. */
export async function openTab(file: string, origin: string, opts: { timezoneId?: string } = {}): Promise<Tab> {
  const profile = mkdtempSync(join(tmpdir(), "gw-chromium-"));
  // A persistent context is how playwright takes a user-data-dir of our own: fresh for each file.
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width: 1100, height: 900 },
    ...opts,
  });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin });
  const page = context.pages()[0] ?? (await context.newPage());
  // Well inside a test's time, so a missing element fails the step rather than timing the test out.
  page.setDefaultTimeout(10_000);
  let seen: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") seen.push(`console: ${m.text()}`);
  });
  page.on("pageerror", (e) => seen.push(`page error: ${e.message}`));
  page.on("requestfailed", (r) => seen.push(`request failed: ${r.method()} ${r.url()} ${r.failure()?.errorText ?? ""}`));
  page.on("response", (r) => {
    if (r.status() >= 400) seen.push(`HTTP ${r.status()}: ${r.request().method()} ${r.url()}`);
  });
  mkdirSync(SCREENSHOTS, { recursive: true });
  return {
    page,
    context,
    problems() {
      const out = seen;
      seen = [];
      return out;
    },
    async shot(name) {
      await page.screenshot({ path: join(SCREENSHOTS, `${file}-${name}.png`), fullPage: true });
    },
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Opens a view of the dashboard and waits for its heading. */
export async function visit(page: Page, base: string, route: string, heading: string): Promise<void> {
  await page.goto(`${base}/#/${route}`);
  await page.getByRole("heading", { level: 1, name: heading }).waitFor();
}

/** Waits until `locator`'s text matches. */
export async function textOf(page: Page, testId: string, pattern: RegExp): Promise<string> {
  const el = page.getByTestId(testId).filter({ hasText: pattern });
  await el.waitFor();
  return (await el.textContent()) ?? "";
}

/** Registers or logs in through the page's form, and waits for the overview. */
export async function signIn(page: Page, base: string, how: "register" | "login", email: string, password: string): Promise<void> {
  const name = how === "register" ? "Register" : "Log in";
  await visit(page, base, how, name);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name }).click();
  await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
}

/** The number in a money text as the page shows it ("$1,234.50" → 1234.5). */
export const usdIn = (text: string) => Number(text.replace(/[^0-9.-]/g, ""));
