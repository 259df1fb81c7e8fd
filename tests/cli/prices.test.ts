import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { join } from "node:path";
import { freePort, gateway, gatewayJson, serve } from "../support/cli.ts";
import { startGatewayWithInstallation, type TestGateway } from "../support/gateway.ts";
import { postWithApiKey, sqlGet } from "../support/keyed.ts";
import type { MockUpstream } from "../support/mock-upstream.ts";

// gateway prices (the effective table and each price's source), the line serve prints per model whose
// prices it derived, and a request's cost rebuilt line by line from its log row (docs/pricing.md).

const SONNET = {
  id: "sonnet",
  modalities: ["text"],
  endpoints: ["messages", "chat.completions"],
  pricing: { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75, cache_write_1h: 6, web_search: 10 },
  pricing_tiers: [{ above_input_tokens: 200000, input: 6, output: 22.5 }],
  routes: [{ provider: "anthropic", model: "claude-sonnet-4-5" }],
};
const BARE = { id: "claude-bare", modalities: ["text"], endpoints: ["messages"], pricing: { input: 3, output: 15 }, routes: [{ provider: "anthropic", model: "c" }] };
const GPT5 = {
  id: "gpt5",
  modalities: ["text"],
  endpoints: ["chat.completions"],
  pricing: { input: 1.25, output: 10, cache_read: 0.125 },
  service_tiers: { priority: { input: 2.5, output: 20, cache_read: 0.25 } },
  routes: [{ provider: "openai", model: "gpt-5" }],
};
const MODELS = [SONNET, BARE, GPT5];

let up: MockUpstream;
let gw: TestGateway;
let stop: () => Promise<void>;
let install: Awaited<ReturnType<typeof startGatewayWithInstallation>>["install"];
beforeAll(async () => {
  // The same catalog as a file too, for the CLI's own processes.
  ({ up, gw, stop, install } = await startGatewayWithInstallation(MODELS));
});
afterAll(() => stop());

type Price = { usd: number; source: string; rule?: string };
type PricesDoc = { model: string; routes: { provider_kind: string; tables: { table: string; prices: Record<string, Price> }[] }[] }[];

describe("gateway prices", () => {
  it("prints each class with its source: configured, derived by a named rule, or input", async () => {
    const doc = await gatewayJson<PricesDoc>(["prices", "--config", install.config]);
    const base = (model: string) => doc.find((m) => m.model === model)!.routes[0]!.tables[0]!.prices;
    expect(base("sonnet").cache_write_1h).toEqual({ usd: 6, unit: "per 1M tokens", source: "configured" } as never);
    expect(base("claude-bare").cache_write).toMatchObject({ usd: 3.75, source: "derived", rule: "anthropic: 1.25 x input" });
    expect(base("claude-bare").web_search).toMatchObject({ usd: 10, unit: "per 1,000 searches", source: "derived" });
    expect(base("gpt5").cache_write).toMatchObject({ usd: 1.25, source: "input" });
  });
  it("lists the long-context and service tiers after the base table", async () => {
    const doc = await gatewayJson<PricesDoc>(["prices", "--config", install.config]);
    expect(doc.find((m) => m.model === "sonnet")!.routes[0]!.tables.map((t) => t.table)).toEqual(["base", "above 200000 input tokens"]);
    const gpt = doc.find((m) => m.model === "gpt5")!.routes[0]!.tables;
    expect(gpt.map((t) => t.table)).toEqual(["base", "priority"]);
    expect(gpt[1]!.prices.output).toMatchObject({ usd: 20, source: "configured" });
    expect(gpt[1]!.prices.cache_write).toMatchObject({ usd: 2.5, source: "input" });
  });
  it("prints a table without --json", async () => {
    const r = await gateway(["prices", "--config", install.config]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/claude-bare\s+anthropic\s+base\s+cache_read\s+0\.3\s+per 1M tokens\s+derived \(anthropic: 0\.1 x input\)/);
  });
});

describe("gateway serve", () => {
  it("prints one line per model whose prices it derived, naming the classes and rules", async () => {
    const port = String(freePort());
    const s = await serve(["--config", install.config, "--db", join(install.dir, "serve.db"), "--port", port]);
    const out = await s.until(/prices of gpt5/);
    await s.stop();
    expect(out).toContain("gateway: prices of claude-bare on anthropic routes: cache_read (anthropic: 0.1 x input), cache_write (anthropic: 1.25 x input), cache_write_1h (anthropic: 2 x input), web_search (anthropic: 10 USD per 1,000 searches)");
    expect(out).toContain("gateway: prices of gpt5 on openai routes: cache_write (input price), cache_write_1h (input price), web_search (default: 10 USD per 1,000 searches)");
    expect(out).not.toContain("prices of sonnet");
  });
});

describe("the request log keeps each class's count", () => {
  let requestId: string;
  beforeAll(async () => {
    const a = await gw.account(100);
    up.script({ kind: "text", text: "ok", usage: { input: 100, output: 10, cacheRead: 2_000, cacheWrite: 3_000, cacheWrite1h: 100_000, webSearches: 5 } });
    const res = await postWithApiKey(gw, "/v1/messages", { model: "sonnet", max_tokens: 100, messages: [{ role: "user", content: "hi" }] }, a.key);
    requestId = res.headers.get("x-gateway-request-id")!;
    await res.text();
  });

  it("in its row: cache read, 5-minute and 1-hour writes, searches", () => {
    const row = sqlGet(gw, "SELECT input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cache_write_1h_tokens, web_searches, service_tier, cost_nano FROM request_logs WHERE request_id = ?", requestId);
    // 100 × 3,000 + 10 × 15,000 + 2,000 × 300 + 3,000 × 3,750 + 100,000 × 6,000 + 5 × 10,000,000
    expect(row).toEqual({ input_tokens: 100, output_tokens: 10, cache_read_tokens: 2_000, cache_write_tokens: 3_000, cache_write_1h_tokens: 100_000, web_searches: 5, service_tier: null, cost_nano: 662_300_000 });
  });

  it("in the service tier the answer reported", async () => {
    const a = await gw.account(100);
    up.script({ kind: "text", text: "ok", usage: { input: 1_000, output: 1_000, serviceTier: "priority" } });
    const res = await postWithApiKey(gw, "/v1/chat/completions", { model: "gpt5", max_tokens: 100, messages: [{ role: "user", content: "hi" }] }, a.key);
    await res.text();
    const row = sqlGet(gw, "SELECT service_tier, cost_nano FROM request_logs WHERE request_id = ?", res.headers.get("x-gateway-request-id")!);
    expect(row).toEqual({ service_tier: "priority", cost_nano: 22_500_000 });
  });

  it("so gateway logs show rebuilds the cost class by class", async () => {
    const doc = await gatewayJson<{ cost_lines: Record<string, unknown>[]; price_table: string; cost_usd: number }>(["logs", "show", requestId, "--config", install.config, "--db", gw.config.database]);
    expect(doc.price_table).toBe("base");
    expect(doc.cost_lines).toEqual([
      { class: "input", count: 100, price_usd: "3", unit: "per 1M tokens", cost_usd: "0.0003" },
      { class: "output", count: 10, price_usd: "15", unit: "per 1M tokens", cost_usd: "0.00015" },
      { class: "cache_read", count: 2_000, price_usd: "0.3", unit: "per 1M tokens", cost_usd: "0.0006" },
      { class: "cache_write", count: 3_000, price_usd: "3.75", unit: "per 1M tokens", cost_usd: "0.01125" },
      { class: "cache_write_1h", count: 100_000, price_usd: "6", unit: "per 1M tokens", cost_usd: "0.6" },
      { class: "web_search", count: 5, price_usd: "10", unit: "per 1,000 searches", cost_usd: "0.05" },
    ]);
    expect(doc.cost_usd).toBe(0.6623);
    const human = await gateway(["logs", "show", requestId, "--config", install.config, "--db", gw.config.database]);
    expect(human.stdout).toContain("total, rounded up once: 0.6623 USD (as charged)");
  });
});

