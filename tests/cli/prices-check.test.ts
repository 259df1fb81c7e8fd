import { afterAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { stringify } from "smol-toml";
import { parseConfig } from "../../src/config/load.ts";
import { gateway, tempInstallation } from "../support/cli.ts";

// gateway prices --check: each route's sale prices against the provider's list prices from the bundled
// dataset (docs/pricing.md#checking-your-prices-against-the-list). No provider is called: the base URLs
// below are never reached, and their API key variables are left unset on purpose.

setDefaultTimeout(30_000);

const UNSET = "GATEWAY_TEST_KEY_NEVER_SET";
const providers = [
  { id: "anthropic", kind: "anthropic", base_url: "https://api.anthropic.com", api_key: `\${${UNSET}}` },
  { id: "openai", kind: "openai", base_url: "https://api.openai.com/v1", api_key: `\${${UNSET}}`, headers: { "X-Org": `\${${UNSET}_ORG}` } },
  { id: "local", kind: "openai", base_url: "http://127.0.0.1:9/v1" },
  { id: "google", kind: "openai", base_url: "https://generativelanguage.googleapis.com/v1beta/openai" },
  { id: "deepseek", kind: "openai", base_url: "https://api.deepseek.com" },
];
const text = { modalities: ["text"], endpoints: ["messages", "chat.completions"] };
const sonnet = (pricing: Record<string, number>) => ({ id: "claude-sonnet-4-5", ...text, pricing, routes: [{ provider: "anthropic", model: "claude-sonnet-4-5-20250929" }] });
const LIST_SONNET = { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75, cache_write_1h: 6, web_search: 10 };

const installs: { remove(): void }[] = [];
afterAll(() => installs.forEach((i) => i.remove()));

/** `gateway prices ARGS --config FILE` on a config of these models, with no API key variable set. */
async function check(models: unknown[], args = ["--check"]) {
  const install = tempInstallation(stringify({ providers, models }));
  installs.push(install);
  // The child gets this process's environment, where the key variables are not set.
  return gateway(["prices", ...args, "--config", install.config]);
}

type Row = { table: string; class: string; sale_usd: number; list_usd: number | null; list_above_input_tokens: number | null; margin_usd: number | null; margin_pct: number | null; below_cost: boolean };
type Report = { dataset: { name: string; version: string }; below_cost: number; routes: { model: string; provider: string; upstream_model: string; status: string; list_provider: string | null; list_model: string | null; rows: Row[]; notes: string[] }[] };

async function report(models: unknown[]): Promise<{ code: number; doc: Report }> {
  const r = await check(models, ["--check", "--json"]);
  return { code: r.code, doc: JSON.parse(r.stdout) as Report };
}

describe("gateway prices --check", () => {
  it("flags claude-sonnet-4-5 sold at input 2.0 against the list's 3.0 and exits 1", async () => {
    const r = await check([sonnet({ ...LIST_SONNET, input: 2 })]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/base\s+input\s+2\s+3\s+-1\s+-33\.3%\s+BELOW COST/);
    expect(r.stdout).toMatch(/base\s+output\s+15\s+15\s+0\s+0%\s+ok/);
    expect(r.stdout).toContain("1 price(s) below the provider's list price (exit 1)");
  });

  it("exits 0 when every class is sold at or above the list price", async () => {
    const r = await check([sonnet({ input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 })]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("no price below the provider's list price");
  });

  it("flags only the class configured under the list price", async () => {
    // cache_write_1h configured at the 5-minute price: Anthropic bills 2 x input for 1-hour writes.
    const { code, doc } = await report([sonnet({ ...LIST_SONNET, cache_write_1h: 3.75 })]);
    expect(code).toBe(1);
    expect(doc.routes[0]!.rows.filter((x) => x.below_cost).map((x) => x.class)).toEqual(["cache_write_1h"]);
  });

  it("reports a model not in the price list without failing", async () => {
    const { code, doc } = await report([{ ...sonnet(LIST_SONNET), routes: [{ provider: "anthropic", model: "claude-made-up-9" }] }]);
    expect(code).toBe(0);
    expect(doc.routes[0]).toMatchObject({ status: "not in the price list", list_provider: "anthropic", rows: [] });
  });

  it("reports an OpenAI-compatible base URL the dataset does not know as an unknown provider", async () => {
    const { code, doc } = await report([{ ...sonnet({ input: 0.01, output: 0.01 }), routes: [{ provider: "local", model: "claude-sonnet-4-5" }] }]);
    expect(code).toBe(0);
    expect(doc.routes[0]).toMatchObject({ status: "unknown provider", list_provider: null, rows: [] });
  });

  it("gives every route's rows in --json: class, sale, list, margin, below_cost", async () => {
    const gpt = { id: "gpt-5", ...text, pricing: { input: 1.25, output: 10, cache_read: 0.125 }, routes: [{ provider: "openai", model: "gpt-5" }] };
    const { code, doc } = await report([sonnet({ ...LIST_SONNET, input: 2 }), gpt]);
    expect(code).toBe(1);
    expect(doc.dataset.name).toBe("@pydantic/genai-prices");
    expect(doc.dataset.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(doc.below_cost).toBe(1);
    expect(doc.routes.map((r) => [r.model, r.provider, r.upstream_model, r.status, r.list_model])).toEqual([
      ["claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5-20250929", "listed", "claude-sonnet-4-5"],
      ["gpt-5", "openai", "gpt-5", "listed", "gpt-5"],
    ]);
    expect(doc.routes[0]!.rows[0]).toEqual({
      table: "base", above_input_tokens: null, class: "input", unit: "per 1M tokens", sale_usd: 2, list_usd: 3,
      list_above_input_tokens: null, list_key: "input_mtok", margin_usd: -1, margin_pct: -33.3, below_cost: true,
    } as never);
    // OpenAI lists no cache-write price: writes are billed as input.
    expect(doc.routes[1]!.rows.find((x) => x.class === "cache_write")).toMatchObject({ sale_usd: 1.25, list_usd: 1.25, below_cost: false });
  });

  it("compares a flat price with the list's long-context tier that prompts can reach", async () => {
    const gemini = (tiers?: unknown) => ({ id: "gemini", ...text, pricing: { input: 1.25, output: 10, cache_read: 0.125 }, ...(tiers ? { pricing_tiers: tiers } : {}), routes: [{ provider: "google", model: "gemini-2.5-pro" }] });
    const flat = await report([gemini()]);
    expect(flat.code).toBe(1);
    expect(flat.doc.routes[0]!.rows.find((x) => x.class === "input")).toMatchObject({ sale_usd: 1.25, list_usd: 2.5, list_above_input_tokens: 200000, below_cost: true });
    const tiered = await report([gemini([{ above_input_tokens: 200000, input: 2.5, output: 15, cache_read: 0.25 }])]);
    expect(tiered.code).toBe(0);
    expect(tiered.doc.routes[0]!.rows.filter((x) => x.table !== "base").map((x) => [x.class, x.list_usd])).toContainEqual(["input", 2.5]);
  });

  it("compares an off-peak provider with its highest price of the day, whatever the hour", async () => {
    // DeepSeek lists deepseek-chat at 0.135 / 0.55 off-peak and 0.27 / 1.1 the rest of the day.
    const ds = (pricing: Record<string, number>) => ({ id: "ds", ...text, pricing, routes: [{ provider: "deepseek", model: "deepseek-chat" }] });
    const offPeak = await report([ds({ input: 0.135, output: 0.55, cache_read: 0.035 })]);
    expect(offPeak.code).toBe(1);
    expect(offPeak.doc.routes[0]!.rows.filter((x) => x.below_cost).map((x) => [x.class, x.list_usd])).toEqual([
      ["input", 0.27], ["output", 1.1], ["cache_read", 0.07],
      // Unset on an OpenAI-compatible route, cache writes sell at the input price: as far under.
      ["cache_write", 0.27], ["cache_write_1h", 0.27],
    ]);
    expect((await report([ds({ input: 0.27, output: 1.1, cache_read: 0.07 })])).code).toBe(0);
  });

  it("says a service tier's prices are not compared (the dataset lists none)", async () => {
    const gpt = { id: "gpt-5", ...text, pricing: { input: 1.25, output: 10, cache_read: 0.125 }, service_tiers: { flex: { input: 0.625, output: 5 } }, routes: [{ provider: "openai", model: "gpt-5" }] };
    const { code, doc } = await report([gpt]);
    expect(code).toBe(0);
    expect(doc.routes[0]!.notes.join("\n")).toContain("service tiers flex");
  });

  it("exits 2 on a usage error", async () => {
    expect((await check([sonnet(LIST_SONNET)], ["--check", "extra"])).code).toBe(2);
  });
});

describe("gateway prices without the providers' secrets", () => {
  it("loads a config whose api_key and header variables are unset (with and without --check)", async () => {
    expect(process.env[UNSET]).toBeUndefined();
    for (const args of [[], ["--check"]]) {
      const r = await check([sonnet(LIST_SONNET)], args);
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
    }
  });

  it("leaves an unset secret as written and still requires every other variable", () => {
    const raw = { providers: [{ ...providers[0]!, base_url: "${GATEWAY_TEST_URL_NEVER_SET}" }], models: [sonnet(LIST_SONNET)] };
    expect(() => parseConfig(raw, "t", {}, { unsetSecrets: "keep" })).toThrow("providers[0].base_url: environment variable GATEWAY_TEST_URL_NEVER_SET is not set");
    const kept = parseConfig({ providers: [providers[0]], models: [sonnet(LIST_SONNET)] }, "t", {}, { unsetSecrets: "keep" });
    expect(kept.providers[0]!.api_key).toBe(`\${${UNSET}}`);
    expect(() => parseConfig({ providers: [providers[0]], models: [sonnet(LIST_SONNET)] }, "t", {})).toThrow(`environment variable ${UNSET} is not set`);
  });
});
