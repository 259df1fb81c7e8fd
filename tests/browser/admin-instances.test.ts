import { afterAll, afterEach, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { startGatewayOnPostgres, type RunningGateway } from "../../src/server.ts";
import { Browser as ApiBrowser } from "../api/support.ts";
import { postgresConfig } from "../support/cluster.ts";
import { startPostgres, type TestPostgres } from "../support/postgres.ts";
import { openTab, signIn, type Tab } from "./support.ts";

// The admin page's Instances table on PostgreSQL: each instance's last reload of its own config,
// so that a file one machine refused is seen from any of them (docs/scaling.md#reloading-the-fleet).

setDefaultTimeout(60_000);

const ADMIN = "instances-admin@example.test";
let pg: TestPostgres;
let gw: RunningGateway;
let tab: Tab;

beforeAll(async () => {
  pg = await startPostgres();
  const url = await pg.createDatabase("admin_instances");
  const config = postgresConfig(url, {
    instanceId: "ui-1",
    providers: [{ id: "demo", kind: "demo" }],
    models: [{ id: "demo", modalities: ["text"], endpoints: ["messages"], pricing: { input: 3, output: 15 }, routes: [{ provider: "demo", model: "demo" }] }],
  });
  // A reload reads a config the load refuses (a model without endpoints, prices or routes): refused, the running config kept.
  gw = await startGatewayOnPostgres(config, { port: 0, quiet: true, read: () => postgresConfig(url, { providers: [], models: [{ id: "x" }] }) });
  const admin = new ApiBrowser(gw.url);
  await admin.register(ADMIN, "admin password");
  await gw.services.accounts.setAdmin(((await (await admin.call("GET", "/api/me")).json()) as { id: number }).id, true);
  tab = await openTab("admin-instances", gw.url);
});

afterAll(async () => {
  await tab?.close();
  await gw?.stop();
  await pg?.stop();
});

afterEach(() => {
  expect(tab.problems()).toEqual([]);
});

describe("the admin page's Instances table", () => {
  it("shows an instance's refused reload with the file's reason, and none before it", async () => {
    const { page } = tab;
    await signIn(page, gw.url, "login", ADMIN, "admin password");
    await page.getByRole("navigation").getByRole("link", { name: "Admin" }).click();
    const instances = page.getByRole("table", { name: "Instances" });
    await instances.waitFor();
    expect(await instances.getByRole("row").nth(1).textContent()).toContain("none since its start");
    expect(gw.reload().reloaded).toBe(false);
    // The outcome is written on the instance's row in the background.
    while ((await gw.services.ledger.instances())[0]?.lastReload == null) await Bun.sleep(20);
    await page.reload();
    await page.getByRole("table", { name: "Instances" }).waitFor();
    const row = await page.getByRole("table", { name: "Instances" }).getByRole("row").nth(1).textContent();
    expect(row).toContain("ui-1");
    expect(row).toContain("refused, running config kept: ");
  });
});
