import { afterAll, afterEach, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { startStripeMock, type StripeMock } from "../support/stripe-mock.ts";
import { openTab, signIn, textOf, visit, type Tab } from "./support.ts";

// A top-up in a real browser against the loopback Stripe: the page opens a Checkout Session and goes
// to its URL (answered here in Stripe's place), Stripe's webhook arrives twice, the browser comes back.

setDefaultTimeout(30_000);

let gw: TestGateway;
let stripe: StripeMock;
let tab: Tab;
let sessionId = "";

beforeAll(async () => {
  stripe = startStripeMock();
  gw = await startTestGateway(stripe.config());
  tab = await openTab("topup", gw.url);
  // Checkout's page is Stripe's; offline, a stand-in answers for it.
  await tab.page.route("https://checkout.stripe.com/**", (route) => route.fulfill({ status: 200, contentType: "text/html", body: "<!doctype html><title>Checkout</title><p>Stripe Checkout</p>" }));
});

afterAll(async () => {
  await tab?.close();
  await gw?.stop();
  stripe?.stop();
});

afterEach(() => {
  expect(tab.problems()).toEqual([]);
});

describe("a top-up through Stripe Checkout", () => {
  it("opens a Checkout Session for the amount and sends the browser to it", async () => {
    const { page } = tab;
    await signIn(page, gw.url, "register", "payer@example.test", "correct horse battery");
    await visit(page, gw.url, "topup", "Top up");
    await page.getByLabel("Amount (USD)").fill("5");
    await tab.shot("topup-form");
    await page.getByRole("button", { name: "Pay with Stripe" }).click();
    await page.waitForURL(/^https:\/\/checkout\.stripe\.com\//);
    const [session] = [...stripe.sessions.values()];
    expect(page.url()).toBe(session!.url);
    expect(session!.amount_total).toBe(500);
    sessionId = session!.id;
  });

  it("credits the balance once when Stripe's webhook is delivered twice", async () => {
    const { payload } = stripe.event(sessionId);
    const [a, b] = await Promise.all([stripe.deliver(gw.url, payload), stripe.deliver(gw.url, payload)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect((await stripe.deliver(gw.url, payload)).status).toBe(200);
    const topUps = gw.services.db.$client.query("SELECT amount_nano FROM ledger_entries WHERE kind = 'top_up'").all();
    expect(topUps).toEqual([{ amount_nano: 5_000_000_000 }]);
  });

  it("shows the credited top-up and the new balance when the browser comes back", async () => {
    const { page } = tab;
    const back = stripe.sessions.get(sessionId)!.success_url.replace("{CHECKOUT_SESSION_ID}", sessionId);
    expect(back).toBe(`${gw.url}/#/topup?session_id=${sessionId}`);
    await page.goto(back);
    await page.getByRole("heading", { level: 1, name: "Top up" }).waitFor();
    await page.getByTestId("topup-credited").waitFor();
    await page.getByRole("row").filter({ hasText: "$5.00" }).filter({ hasText: "credited" }).waitFor();
    await tab.shot("topup-credited");
    // The receipt opens beside the dashboard, a page of its own to print.
    const [receipt] = await Promise.all([page.waitForEvent("popup"), page.getByTestId("receipt-link").first().click()]);
    await receipt.getByRole("heading", { name: "Receipt" }).waitFor();
    expect(await receipt.textContent("body")).toContain("5.00 USD");
    await receipt.close();
    await visit(page, gw.url, "", "Overview");
    expect(await textOf(page, "balance", /\$/)).toBe("$6.00");
  });

  it("says the top-up is credited once Stripe's webhook arrives after the browser came back", async () => {
    const { page } = tab;
    await visit(page, gw.url, "topup", "Top up");
    await page.getByLabel("Amount (USD)").fill("2");
    await page.getByRole("button", { name: "Pay with Stripe" }).click();
    await page.waitForURL(/^https:\/\/checkout\.stripe\.com\//);
    const session = [...stripe.sessions.values()].find((s) => s.id !== sessionId)!;
    await page.goto(session.success_url.replace("{CHECKOUT_SESSION_ID}", session.id));
    await page.getByText("credited as soon as Stripe confirms").waitFor();
    expect(await page.getByTestId("topup-credited").count()).toBe(0);
    expect((await stripe.deliver(gw.url, stripe.event(session.id).payload)).status).toBe(200);
    // No reload by the holder: the page asks again while the top-up is pending.
    await page.getByTestId("topup-credited").waitFor({ timeout: 10_000 });
    await page.getByRole("row").filter({ hasText: "$2.00" }).filter({ hasText: "credited" }).waitFor();
  });

  for (const usd of ["0.5", "5.005", "-5"]) {
    it(`opens no session for ${usd} USD: the field is invalid and nothing is sent`, async () => {
      const { page } = tab;
      await visit(page, gw.url, "topup", "Top up");
      const opened = stripe.sessions.size;
      await page.getByLabel("Amount (USD)").fill(usd);
      await page.getByRole("button", { name: "Pay with Stripe" }).click();
      expect(await page.locator('input[name="amount_usd"]:invalid').count()).toBe(1);
      expect(page.url()).toStartWith(gw.url);
      expect(stripe.sessions.size).toBe(opened);
      expect(books()).toEqual({ balance: 8e9, ledger: 8e9 });
    });
  }

  it("opens one session when Pay with Stripe is double-clicked", async () => {
    const { page } = tab;
    await visit(page, gw.url, "topup", "Top up");
    const opened = stripe.sessions.size;
    await page.getByLabel("Amount (USD)").fill("3");
    await page.getByRole("button", { name: "Pay with Stripe" }).dblclick();
    await page.waitForURL(/^https:\/\/checkout\.stripe\.com\//);
    expect(stripe.sessions.size).toBe(opened + 1);
  });

  it("says nothing was charged when the browser comes back cancelled, and the balance is as it was", async () => {
    const { page } = tab;
    const session = [...stripe.sessions.values()].at(-1)!;
    await page.goto(session.cancel_url);
    await page.getByText("Payment cancelled: nothing was charged.").waitFor();
    await page.getByRole("row").filter({ hasText: "$3.00" }).filter({ hasText: "pending" }).waitFor();
    expect(await textOf(page, "topup-balance", /\$/)).toBe("$8.00");
    expect(books()).toEqual({ balance: 8e9, ledger: 8e9 });
  });
});

/** The payer's balance and its ledger's sum. */
const books = () =>
  gw.services.db.$client
    .query(
      "SELECT a.balance_nano AS balance, (SELECT coalesce(sum(amount_nano), 0) FROM ledger_entries WHERE account_id = a.id) AS ledger FROM accounts a WHERE a.email = 'payer@example.test'",
    )
    .get();
