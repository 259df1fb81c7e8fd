import { afterAll, afterEach, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { Browser } from "../api/support.ts";
import { startGatewayOnMock, type TestGateway } from "../support/gateway.ts";
import { postWithApiKey, messagesBody } from "../support/keyed.ts";
import { openTab, signIn, visit, type Tab } from "./support.ts";

// A charged request's cost in its detail (docs/dashboard.md#the-accounts-figures): each price class's
// count × its list price, down to the amount charged, web searches included.

setDefaultTimeout(30_000);

let gw: TestGateway;
let tab: Tab;
let stop: () => Promise<void>;
const EMAIL = "costs@example.test";
const PASSWORD = "correct horse battery";
const MODEL = { id: "searcher", modalities: ["text"], endpoints: ["messages"], pricing: { input: 3, output: 15, web_search: 10 }, routes: [{ provider: "anthropic", model: "searcher" }] };

beforeAll(async () => {
  let up;
  ({ gw, up, stop } = await startGatewayOnMock({ models: [MODEL] }));
  up.setDefault({ kind: "text", text: "found it", usage: { input: 1000, output: 200, webSearches: 3 } });
  tab = await openTab("request-cost", gw.url);
});

afterAll(async () => {
  await tab?.close();
  await stop?.();
});

afterEach(() => {
  expect(tab.problems()).toEqual([]);
});

describe("a charged request's detail", () => {
  it("prices its web searches at the list price per 1,000, as its tokens, so the lines add up to the charge", async () => {
    const { page } = tab;
    await signIn(page, gw.url, "register", EMAIL, PASSWORD);
    const b = new Browser(gw.url);
    await b.call("POST", "/api/login", { email: EMAIL, password: PASSWORD });
    const key = ((await (await b.call("POST", "/api/keys", {})).json()) as { key: string }).key;
    const res = await postWithApiKey(gw, "/v1/messages", messagesBody(256, "searcher"), key);
    expect(res.status).toBe(200);
    const id = res.headers.get("x-gateway-request-id")!;
    await visit(page, gw.url, "usage", "Usage");
    await page.getByRole("button", { name: `Details of ${id}` }).click();
    const detail = page.getByRole("region", { name: "Request detail" });
    expect(await detail.getByRole("listitem").allTextContents()).toEqual([
      "Input tokens: 1000 × $3.00 / 1M = $0.003",
      "Output tokens: 200 × $15.00 / 1M = $0.003",
      "Web searches: 3 × $10.00 / 1,000 = $0.03",
    ]);
    expect(await detail.getByText(/^Charged:/).textContent()).toStartWith("Charged: $0.036");
  });
});
