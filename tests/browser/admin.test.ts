import { afterAll, afterEach, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { Browser as ApiBrowser } from "../api/support.ts";
import { gateway } from "../support/cli.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { openTab, signIn, visit, type Tab } from "./support.ts";

// The operator's side in a real browser: an account made admin with the CLI sees the admin page and
// credits another account with a note.

setDefaultTimeout(30_000);

let gw: TestGateway;
let tab: Tab;
const ADMIN = "operator@example.test";
const HOLDER = "holder@example.test";

beforeAll(async () => {
  gw = await startTestGateway();
  tab = await openTab("admin", gw.url);
  await new ApiBrowser(gw.url).register(HOLDER);
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
});
