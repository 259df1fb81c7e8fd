import { afterAll, afterEach, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { startGatewayOnMock } from "../support/gateway.ts";
import { ledgerRows, messagesBody, postWithApiKey } from "../support/keyed.ts";
import { openTab, signIn, textOf, visit, type Tab } from "./support.ts";

// The overview's spend at a glance in a real browser: a fresh account's empty state, then requests on
// two models with two keys through /v1 against a loopback upstream, whose ledger sums the figures show,
// with a stacked bar per day, at desktop width and at a phone's 390 px.

setDefaultTimeout(60_000);

const model = (id: string, input: number) => ({ id, modalities: ["text"], endpoints: ["messages"], pricing: { input, output: 15 }, routes: [{ provider: "anthropic", model: id }] });
// The dashboard's one money format (src/dashboard/ui/dom.ts).
const USD = new Intl.NumberFormat("en-US", { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 6 });
let rig: Awaited<ReturnType<typeof startGatewayOnMock>>;
let tab: Tab;

beforeAll(async () => {
  rig = await startGatewayOnMock({ models: [model("alpha", 3), model("beta", 1)] });
  rig.up.setDefault({ kind: "text", text: "hello there", usage: { cacheRead: 2000, cacheWrite: 100 } });
  tab = await openTab("overview", rig.gw.url);
});

afterAll(async () => {
  await tab?.close();
  await rig?.stop();
});

afterEach(() => {
  expect(tab.problems()).toEqual([]);
});

/** The page's session calls the dashboard's API (same cookies, same origin). */
async function call(method: "get" | "post", path: string, data?: unknown): Promise<Record<string, any>> {
  const res = await tab.context.request[method](rig.gw.url + path, { data, headers: { origin: rig.gw.url } });
  expect(res.status()).toBeLessThan(300);
  return (await res.json()) as Record<string, any>;
}

const noSideScroll = () => tab.page.evaluate("document.documentElement.scrollWidth <= window.innerWidth");

describe("the overview's spend", () => {
  it("tells a fresh account it has no spend yet, with zero figures", async () => {
    const { page } = tab;
    await signIn(page, rig.gw.url, "register", "grace@example.test", "correct horse battery");
    await page.getByTestId("spend-empty").waitFor();
    expect(await page.getByTestId("spend-empty").textContent()).toContain("No spend yet");
    expect(await page.getByTestId("spend-today").textContent()).toBe("$0.00");
    expect(await page.getByTestId("cache-saved").textContent()).toBe("$0.00");
    await tab.shot("empty");
  });

  it("shows today's, the week's and the month's spend as the ledger's sums, and a stacked bar", async () => {
    const { page } = tab;
    const me = await call("get", "/api/me");
    const keys = [await call("post", "/api/keys", { name: "ci" }), await call("post", "/api/keys", { name: "laptop" })];
    for (const [k, m] of [[0, "alpha"], [0, "alpha"], [1, "beta"], [1, "alpha"]] as const) {
      const res = await postWithApiKey(rig.gw, "/v1/messages", messagesBody(16, m), keys[k]!.key);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    const charged = -ledgerRows(rig.gw, me.id).reduce((n, r) => n + (r.kind === "charge" ? r.amount_nano : 0), 0);
    expect(charged).toBeGreaterThan(0);
    // The overview is already open: a reload reads its figures anew.
    await page.reload();
    await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
    const shown = USD.format(charged / 1e9);
    expect(await textOf(page, "spend-today", /\$/)).toBe(shown);
    expect(await page.getByTestId("spend-7d").textContent()).toBe(shown);
    expect(await page.getByTestId("spend-month").textContent()).toBe(shown);
    expect(await page.getByTestId("spend-period").textContent()).toBe(shown);
    expect(await page.getByTestId("cache-read").textContent()).toBe("8,000");
    // alpha saves 2.7 USD per million cached tokens on 6,000, beta 0.9 on 2,000.
    expect(await page.getByTestId("cache-saved").textContent()).toBe(USD.format((6000 * 2700 + 2000 * 900) / 1e9));
    const chart = page.getByTestId("spend-chart");
    expect(await chart.locator("svg rect").count()).toBe(2);
    expect(await chart.getByRole("img").getAttribute("aria-label")).toContain(`Spend per day by model`);
    expect(await chart.locator(".legend li").allTextContents()).toEqual([expect.stringContaining("alpha"), expect.stringContaining("beta")]);
    await tab.shot("by-model");
    await page.getByLabel("Stack by").selectOption("key");
    expect(await chart.locator(".legend li").allTextContents()).toEqual([expect.stringContaining("ci"), expect.stringContaining("laptop")]);
    expect(await page.getByTestId("spend-chart").locator("svg rect").count()).toBe(2);
    await tab.shot("by-key");
  });

  it("narrows the figures and the chart to one model with the filters", async () => {
    const { page } = tab;
    await page.getByRole("form", { name: "Filter spend" }).getByLabel("Model").selectOption("beta");
    await page.getByRole("button", { name: "Show" }).click();
    await page.waitForURL(/model=beta/);
    await page.getByTestId("spend-chart").locator(".legend li").filter({ hasText: "beta" }).waitFor();
    expect(await page.getByTestId("spend-chart").locator(".legend li").count()).toBe(1);
    expect(await page.getByTestId("cache-read").textContent()).toBe("2,000");
  });

  it("shows a bad date in the address as the refusal above the filters", async () => {
    const { page } = tab;
    await visit(page, rig.gw.url, "?from=yesterday", "Overview");
    expect(await page.getByRole("alert").textContent()).toContain("from: a UTC day such as 2026-11-01, not 'yesterday'");
    await page.getByRole("form", { name: "Filter spend" }).waitFor();
    // The refused call is the one HTTP error the page saw (and Chromium's console line about it).
    expect(tab.problems()).toEqual([expect.stringMatching(/^HTTP 400: GET .*\/api\/usage\/summary\?from=yesterday$/), expect.stringContaining("status of 400")]);
  });

  it("fits a 390 px wide phone without scrolling sideways", async () => {
    const { page } = tab;
    await page.setViewportSize({ width: 390, height: 844 });
    await visit(page, rig.gw.url, "", "Overview");
    await page.getByTestId("spend-chart").waitFor();
    expect(await noSideScroll()).toBe(true);
    await tab.shot("phone");
    await page.setViewportSize({ width: 1100, height: 900 });
  });
});

// The usage page draws the same bars (src/dashboard/ui/views/spend.ts) under its own filters.
describe("the usage page's spend per day", () => {
  const usageChart = () => tab.page.getByRole("region", { name: "Spend per day" }).getByTestId("spend-chart");

  it("draws the overview's stacked bars, one part per model, with their legend", async () => {
    const { page } = tab;
    await visit(page, rig.gw.url, "usage", "Usage");
    await usageChart().waitFor();
    expect(await usageChart().locator("svg rect").count()).toBe(2);
    expect(await usageChart().locator(".legend li").allTextContents()).toEqual([expect.stringContaining("alpha"), expect.stringContaining("beta")]);
    expect(await page.locator("canvas").count()).toBe(0);
    await tab.shot("usage-chart");
  });

  it("follows the usage page's model and key filters", async () => {
    const { page } = tab;
    const form = page.getByRole("form", { name: "Filter requests" });
    await form.getByLabel("Model").selectOption("alpha");
    await form.getByLabel("Key").selectOption({ label: (await form.getByLabel("Key").locator("option").filter({ hasText: "laptop" }).textContent())! });
    await form.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/model=alpha/);
    await usageChart().locator(".legend li").filter({ hasText: "alpha" }).waitFor();
    expect(await usageChart().locator(".legend li").count()).toBe(1);
    await page.getByRole("region", { name: "Spend per day" }).getByLabel("Stack by").selectOption("key");
    expect(await usageChart().locator(".legend li").allTextContents()).toEqual([expect.stringContaining("laptop")]);
  });

  it("says there was no spend on dates without requests", async () => {
    const { page } = tab;
    await visit(page, rig.gw.url, "usage?since=2026-01-01&until=2026-01-08", "Usage");
    const empty = page.getByRole("region", { name: "Spend per day" }).getByTestId("spend-empty");
    await empty.waitFor();
    expect(await empty.textContent()).toContain("No spend yet in this period");
    expect(await page.getByTestId("usage-spend-period").textContent()).toBe("$0.00");
  });

  it("charts the days the requests list shows: From included, Until left out", async () => {
    const { page } = tab;
    const today = new Date().toISOString().slice(0, 10);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    await visit(page, rig.gw.url, `usage?since=${today}&until=${tomorrow}`, "Usage");
    await usageChart().waitFor();
    expect(await usageChart().locator("svg rect").count()).toBe(2);
    expect(await page.getByRole("region", { name: "Spend per day" }).textContent()).toContain(`${today} to ${today}, UTC days`);
    await visit(page, rig.gw.url, `usage?since=${today}&until=${today}`, "Usage");
    expect(await page.getByRole("region", { name: "Spend per day" }).getByTestId("spend-empty").textContent()).toContain("No days to show");
  });

  it("fits a 390 px wide phone without scrolling sideways", async () => {
    const { page } = tab;
    await page.setViewportSize({ width: 390, height: 844 });
    await visit(page, rig.gw.url, "usage", "Usage");
    await usageChart().waitFor();
    expect(await noSideScroll()).toBe(true);
    await tab.shot("usage-chart-phone");
    await page.setViewportSize({ width: 1100, height: 900 });
  });
});
