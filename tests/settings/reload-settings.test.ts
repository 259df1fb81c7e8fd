import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { startGatewayOnMock, mockProviders, testConfig, type TestGateway } from "../support/gateway.ts";
import { keyHeaders } from "../support/http.ts";
import { startMockUpstream, type MockUpstream } from "../support/mock-upstream.ts";
import { textModel } from "../support/prices.ts";

// What a reload changes (docs/operations.md#reload) besides the prices: limits, dashboard settings,
// providers and the catalog follow the new file; the listen port is named and kept.

let up: MockUpstream;
let other: MockUpstream;
let gw: TestGateway;
let stop: () => Promise<void>;
let key: string;
beforeAll(async () => {
  ({ up, gw, stop } = await startGatewayOnMock({ models: [textModel("claude-x", "anthropic")], limits: { default_rpm: 20 } }));
  other = await startMockUpstream();
  key = (await gw.account(5)).key;
});
afterAll(async () => {
  await stop();
  await other.stop();
});

/** The config the next reload reads: the running one's test file, as an object. */
function nextFile(file: Record<string, unknown>) {
  gw.services.live.read = () => {
    const { config, dir } = testConfig(file);
    rmSync(dir, { recursive: true, force: true });
    // testConfig gives each config its own folder; the file names the running database.
    return { ...config, database: gw.config.database };
  };
}

const messages = () =>
  fetch(`${gw.url}/v1/messages`, {
    method: "POST",
    headers: { ...keyHeaders(key), "content-type": "application/json" },
    body: JSON.stringify({ model: "claude-x-20250101", max_tokens: 20, messages: [{ role: "user", content: "hi" }] }),
  });

describe("a reload", () => {
  it("applies the new limits, dashboard settings, providers and catalog to the requests after it", async () => {
    expect((await messages()).status).toBe(404);
    nextFile({
      providers: mockProviders(other),
      models: [{ ...textModel("claude-x", "anthropic"), aliases: ["claude-x-*"] }],
      limits: { default_rpm: 7 },
      dashboard: { registration: "closed" },
    });
    const outcome = gw.reload();
    expect(outcome).toMatchObject({ reloaded: true, models: 1, providers: 1 });
    const me = (await (await fetch(`${gw.url}/v1/me`, { headers: keyHeaders(key) })).json()) as { limits: { rpm: number } };
    expect(me.limits.rpm).toBe(7);
    const pricing = (await (await fetch(`${gw.url}/api/pricing`)).json()) as { starting_balance_usd: number };
    expect(pricing.starting_balance_usd).toBe(0);
    const hitsBefore = up.requests.length;
    const res = await messages();
    expect(res.status).toBe(200);
    expect(((await res.json()) as { model: string }).model).toBe("claude-x");
    expect(other.requests.length).toBe(1);
    expect(up.requests.length).toBe(hitsBefore);
  });

  it("names a changed port as needing a restart and keeps the running one", () => {
    nextFile({ server: { port: 1 }, providers: mockProviders(other), models: [textModel("claude-x", "anthropic")] });
    const outcome = gw.reload();
    expect(outcome).toMatchObject({ reloaded: true, needsRestart: ["server.port"] });
    expect(gw.services.live.current().config.port).toBe(gw.config.port);
  });
});
