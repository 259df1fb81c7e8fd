import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { startTestGateway, type TestGateway } from "./support/gateway.ts";
import { usdToNanoShown } from "./support/prices.ts";

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(() => gw.stop());

describe("the demo catalog", () => {
  it("answers a chat completion and charges its cost_usd", async () => {
    const a = await gw.account(1);
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${a.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "demo", max_tokens: 50, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { usage: { cost_usd: number } };
    const m = gw.money(a.accountId);
    expect(m.balance).toBe(1_000_000_000 - usdToNanoShown(body.usage.cost_usd));
    expect(m.ledgerSum).toBe(m.balance);
    expect(m.openHolds).toBe(0);
  });
});
