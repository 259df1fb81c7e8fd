import { afterAll, afterEach, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { Browser as ApiBrowser } from "../api/support.ts";
import { gateway } from "../support/cli.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { openTab, signIn, visit, type Tab } from "./support.ts";

// The operator's side in a real browser: an account made admin with the CLI sees the admin page,
// credits another account with a note, pauses and resumes the product, disables and enables an account.

setDefaultTimeout(30_000);

let gw: TestGateway;
let tab: Tab;
let holderKey: string;
const ADMIN = "operator@example.test";
const HOLDER = "holder@example.test";

beforeAll(async () => {
  gw = await startTestGateway();
  tab = await openTab("admin", gw.url);
  const holder = new ApiBrowser(gw.url);
  await holder.register(HOLDER);
  holderKey = ((await (await holder.call("POST", "/api/keys", { name: "app" })).json()) as { key: string }).key;
  await new ApiBrowser(gw.url).register(ADMIN, "admin password");
  const marked = await gateway(["account", "update", "--email", ADMIN, "--admin", "--db", gw.config.database]);
  expect(marked.code).toBe(0);
});

afterAll(async () => {
  await tab?.close();
  await gw?.stop();
});

afterEach(() => {
  expect(tab.problems()).toEqual([]);
});

describe("the admin page", () => {
  it("is in the navigation of an admin account", async () => {
    const { page } = tab;
    await signIn(page, gw.url, "login", ADMIN, "admin password");
    await page.getByRole("navigation").getByRole("link", { name: "Admin" }).click();
    await page.getByRole("heading", { level: 1, name: "Admin" }).waitFor();
    await page.getByRole("table", { name: "Route health" }).waitFor();
    await tab.shot("admin");
  });

  it("credits an account with a note: its balance, a ledger entry and the audit name the admin", async () => {
    const { page } = tab;
    const row = page.getByRole("row").filter({ hasText: HOLDER });
    expect(await row.textContent()).toContain("$1.00");
    const form = page.getByRole("form", { name: `Credit or debit ${HOLDER}` });
    await form.getByLabel("USD").fill("2.5");
    await form.getByLabel("Note").fill("goodwill");
    await form.getByRole("button", { name: "Credit" }).click();
    await page.getByRole("row").filter({ hasText: HOLDER }).filter({ hasText: "$3.50" }).waitFor();
    const entries = gw.services.db.$client
      .query("SELECT kind, amount_nano, note FROM ledger_entries WHERE kind = 'operator_credit'")
      .all() as { kind: string; amount_nano: number; note: string }[];
    expect(entries).toEqual([{ kind: "operator_credit", amount_nano: 2_500_000_000, note: expect.stringContaining("goodwill") }]);
    await page.getByRole("table", { name: "Audit" }).getByRole("row").filter({ hasText: ADMIN }).first().waitFor();
    await tab.shot("admin-credited");
  });

  it("pauses the product (the next model request is 503 product_paused) and resumes it", async () => {
    const { page } = tab;
    await page.getByRole("button", { name: "Pause" }).click();
    await page.getByRole("button", { name: "Resume" }).waitFor();
    const paused = await chat(holderKey);
    expect(paused.status).toBe(503);
    expect(((await paused.json()) as { error: { code: string } }).error.code).toBe("product_paused");
    await page.getByRole("button", { name: "Resume" }).click();
    await page.getByRole("button", { name: "Pause" }).waitFor();
    expect((await chat(holderKey)).status).toBe(200);
    await page.getByRole("table", { name: "Audit" }).getByRole("row").filter({ hasText: "resume" }).first().waitFor();
  });

  it("disables an account (its key is refused with 403 inactive) and enables it again", async () => {
    const { page } = tab;
    const holderRow = () => page.getByRole("table", { name: "Accounts" }).getByRole("row").filter({ hasText: HOLDER });
    await page.getByRole("button", { name: `Disable ${HOLDER}` }).click();
    await holderRow().filter({ hasText: "disabled" }).waitFor();
    const refused = await chat(holderKey);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("inactive");
    await holderRow().getByRole("button", { name: "Enable" }).click();
    await holderRow().getByRole("button", { name: `Disable ${HOLDER}` }).waitFor();
    expect((await chat(holderKey)).status).toBe(200);
  });
});

function chat(key: string): Promise<Response> {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "demo", max_tokens: 20, messages: [{ role: "user", content: "Hello" }] }),
  });
}
