import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { openTab, signIn, visit, type Tab } from "./support.ts";

// Why a request failed, in a real browser: a failed request's row opens its detail, the failures
// filter shows only failures, and a bad filter says what is wrong instead of emptying the page.

setDefaultTimeout(30_000);

let gw: TestGateway;
let tab: Tab;
let failedId = "";
let okId = "";

beforeAll(async () => {
  gw = await startTestGateway();
  tab = await openTab("request-detail", gw.url);
  await signIn(tab.page, gw.url, "register", "grace@example.test", "correct horse battery");
  // The key through the page's own session, so the requests below are this account's.
  const key = (await tab.page.evaluate(
    `fetch("/api/keys", { method: "POST", credentials: "same-origin", headers: { "content-type": "application/json", accept: "application/json" }, body: "{}" }).then((r) => r.json()).then((k) => k.key)`,
  )) as string;
  const chat = (model: string) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model, max_tokens: 8, messages: [{ role: "user", content: "hi" }] }),
    });
  okId = (await chat("demo")).headers.get("x-gateway-request-id")!;
  const failed = await chat("gpt-9");
  expect(failed.status).toBe(404);
  failedId = failed.headers.get("x-gateway-request-id")!;
});

afterAll(async () => {
  await tab?.close();
  await gw?.stop();
});

describe("a request's detail", () => {
  it("opens a failed request's row and shows its status, error code and requested model", async () => {
    const { page } = tab;
    await visit(page, gw.url, "usage", "Usage");
    await page.getByRole("button", { name: `Details of ${failedId}` }).click();
    const detail = page.getByRole("region", { name: "Request detail" });
    const text = (await detail.textContent()) ?? "";
    expect(text).toContain("Status404");
    expect(text).toContain("Error codemodel_not_found");
    expect(text).toContain("Requested modelgpt-9");
    expect(text).toContain("No model of this name in the catalog.");
    await tab.shot("failed");
    expect(tab.problems()).toEqual([]);
  });

  it("shows only failures under the failures filter", async () => {
    const { page } = tab;
    await page.getByRole("link", { name: "Failures only" }).click();
    await page.getByRole("button", { name: `Details of ${failedId}` }).waitFor();
    expect(await page.getByRole("button", { name: `Details of ${okId}` }).count()).toBe(0);
    expect(tab.problems()).toEqual([]);
  });

  it("shows a bad filter's error instead of an empty page", async () => {
    const { page } = tab;
    await page.goto(`${gw.url}/#/usage?since=garbage`);
    const alert = page.getByRole("alert").filter({ hasText: "since" });
    await alert.waitFor();
    await tab.shot("bad-filter");
    expect(tab.problems().filter((p) => !p.includes("since=garbage") && !p.includes("400"))).toEqual([]);
  });
});
