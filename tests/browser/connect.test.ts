import { afterAll, afterEach, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { openTab, signIn, textOf, usdIn, visit, type Tab } from "./support.ts";

// Right after a key is made, the keys page shows the clients' set-ups with the whole key in them and
// a button that tries the key. Each check that moves money reads the balance afterwards.

setDefaultTimeout(30_000);

let gw: TestGateway;
let tab: Tab;
let key = "";

beforeAll(async () => {
  gw = await startTestGateway();
  tab = await openTab("connect", gw.url);
});
afterAll(async () => {
  await tab?.close();
  await gw?.stop();
});
afterEach(() => {
  expect(tab.problems()).toEqual([]);
});

/** The account's balance as the gateway holds it, asked with the page's session. */
const balance = async () => (await tab.page.evaluate('fetch("/api/me").then((r) => r.json()).then((m) => m.balance_usd)')) as number;

describe("connecting right after creating a key", () => {
  it("folds the create form behind New key, and says the rpm default and maximum in numbers", async () => {
    const { page } = tab;
    await signIn(page, gw.url, "register", "connect@example.test", "correct horse battery");
    await visit(page, gw.url, "keys", "Keys");
    expect(await page.getByRole("form", { name: "Create a key" }).isVisible()).toBe(false);
    await page.getByRole("button", { name: "New key" }).click();
    const hint = await page.locator("#" + (await page.getByLabel("Requests per minute").getAttribute("aria-describedby"))).textContent();
    expect(hint).toBe("Empty: the gateway's default, 20 per minute. At most 20.");
  });

  it("shows every client's snippet with the whole key filled in", async () => {
    const { page } = tab;
    const form = page.getByRole("form", { name: "Create a key" });
    await form.getByLabel("Name").fill("laptop");
    await form.getByRole("button", { name: "Create key" }).click();
    key = (await page.getByTestId("new-key").textContent()) ?? "";
    expect(key).toMatch(/^gk_sk_/);
    for (const title of ["curl", "OpenAI SDK (Python)", "OpenAI SDK (TypeScript)", "Claude Code (environment)", "Codex CLI (~/.codex/config.toml)"]) {
      expect({ title, hasKey: ((await page.getByLabel(title, { exact: true }).textContent()) ?? "").includes(key) }).toEqual({ title, hasKey: true });
    }
    expect(await page.getByLabel("OpenAI SDK (Python)", { exact: true }).textContent()).toContain("max_tokens=");
    expect(await page.getByLabel("OpenAI SDK (TypeScript)", { exact: true }).textContent()).toContain("max_tokens:");
    const claude = (await page.getByLabel("Claude Code (environment)", { exact: true }).textContent()) ?? "";
    const pricing = (await (await fetch(`${gw.url}/api/pricing`)).json()) as { models: { id: string; endpoints: string[] }[] };
    const messages = pricing.models.filter((m) => m.endpoints.includes("messages")).map((m) => m.id);
    for (const name of ["ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL"]) {
      expect(messages).toContain(claude.match(new RegExp(`${name}="([^"]+)"`))?.[1] ?? `no ${name}`);
    }
    expect(await page.getByLabel("Codex CLI (~/.codex/config.toml)", { exact: true }).textContent()).toContain(`base_url = "${gw.url}/v1"`);
    await tab.shot("snippets");
  });

  it("copies the curl snippet, which run in a shell buys a completion charged to the balance", async () => {
    const { page } = tab;
    await page.getByRole("button", { name: "Copy curl to the clipboard" }).click();
    await page.getByRole("button", { name: "Copy curl to the clipboard" }).filter({ hasText: "Copied" }).waitFor();
    const curl = (await page.evaluate("navigator.clipboard.readText()")) as string;
    const before = await balance();
    const run = Bun.spawn(["sh", "-c", curl + ' -w "\\n%{http_code}"'], { stdout: "pipe", stderr: "pipe" });
    const out = await new Response(run.stdout).text();
    expect(await run.exited).toBe(0);
    const status = out.slice(out.lastIndexOf("\n") + 1);
    const answer = JSON.parse(out.slice(0, out.lastIndexOf("\n"))) as { usage: { cost_usd: number } };
    expect(status).toBe("200");
    expect(answer.usage.cost_usd).toBeGreaterThan(0);
    expect(await balance()).toBeCloseTo(before - answer.usage.cost_usd, 9);
  });

  it("tests the key from the page: shows the answer, its cost, and the balance lowered by exactly that cost", async () => {
    const { page } = tab;
    const before = await balance();
    // The key is shown once: a new one for this step.
    await page.getByRole("button", { name: "New key" }).click();
    await page.getByRole("form", { name: "Create a key" }).getByRole("button", { name: "Create key" }).click();
    await page.getByRole("button", { name: "Test this key" }).click();
    const answer = await textOf(page, "test-answer", /\S/);
    const cost = usdIn(await textOf(page, "test-cost", /\$/));
    const after = usdIn(await textOf(page, "test-balance", /\$/));
    expect(answer.length).toBeGreaterThan(0);
    expect(cost).toBeGreaterThan(0);
    expect(after).toBeCloseTo(before - cost, 9);
    expect(await balance()).toBeCloseTo(after, 9);
    await tab.shot("tested");
  });
});
