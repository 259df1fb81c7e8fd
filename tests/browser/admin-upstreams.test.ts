import { afterAll, afterEach, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { Browser as ApiBrowser } from "../api/support.ts";
import { startGatewayOnMock, type TestGateway } from "../support/gateway.ts";
import { messagesBody, postWithApiKey } from "../support/keyed.ts";
import type { MockUpstream } from "../support/mock-upstream.ts";
import { PRICES } from "../support/prices.ts";
import { openTab, signIn, type Tab } from "./support.ts";

// The admin page's upstream keys panel: a key the upstream called overloaded shows as resting, by
// index and hash prefix, and the key itself is nowhere on the page.

setDefaultTimeout(30_000);

const KEYS = ["sk-panel-first-0000", "sk-panel-second-1111"];
const ADMIN = "upstreams-admin@example.test";
let up: MockUpstream;
let gw: TestGateway;
let stop: () => Promise<void>;
let tab: Tab;

beforeAll(async () => {
  ({ up, gw, stop } = await startGatewayOnMock({
    providers: (u) => [{ id: "pool", kind: "anthropic", base_url: u.url, api_keys: KEYS }],
    models: [{ id: "pooled", modalities: ["text"], endpoints: ["messages"], pricing: PRICES, routes: [{ provider: "pool", model: "pooled-up", weight: 2 }] }],
  }));
  tab = await openTab("admin-upstreams", gw.url);
  const admin = new ApiBrowser(gw.url);
  await admin.register(ADMIN, "admin password");
  await gw.services.accounts.setAdmin(((await (await admin.call("GET", "/api/me")).json()) as { id: number }).id, true);
  up.script({ kind: "error", status: 429, headers: { "retry-after": "300" } });
  expect((await postWithApiKey(gw, "/v1/messages", messagesBody(5, "pooled"), (await gw.account(1)).key)).status).toBe(200);
});

afterAll(async () => {
  await tab?.close();
  await stop?.();
});

afterEach(() => {
  expect(tab.problems()).toEqual([]);
});

describe("the admin page's upstream keys", () => {
  it("shows each key of a route by index and fingerprint, the resting one with its time, and never a key", async () => {
    const { page } = tab;
    await signIn(page, gw.url, "login", ADMIN, "admin password");
    await page.getByRole("navigation").getByRole("link", { name: "Admin" }).click();
    const panel = page.getByRole("table", { name: "Upstream keys" });
    await panel.waitFor();
    expect(await page.getByTestId("key-state-pool/pooled-up-0").textContent()).toStartWith("resting until");
    expect(await page.getByTestId("key-state-pool/pooled-up-1").textContent()).toBe("ready");
    const text = (await panel.textContent()) ?? "";
    expect(text).toContain("#0");
    expect(text).toContain("#1");
    const html = await page.content();
    for (const k of KEYS) expect(html).not.toContain(k);
    await tab.shot("panel");
  });
});
