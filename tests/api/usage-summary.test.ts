import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import type { UsageSummary } from "../../src/http/api-schemas.ts";
import { startGatewayOnMock } from "../support/gateway.ts";
import { ledgerRows, messagesBody, postWithApiKey } from "../support/keyed.ts";
import { body, refusedWith, registeredBrowser, type Browser } from "./support.ts";

// GET /api/usage/summary (docs/dashboard.md#overview): the overview's figures are the ledger's sums
// of requests made through /v1, its days and series follow the filters, and bad filters are refused.

setDefaultTimeout(60_000);

const model = (id: string, input: number) => ({ id, modalities: ["text"], endpoints: ["messages"], pricing: { input, output: 15 }, routes: [{ provider: "anthropic", model: id }] });
let rig: Awaited<ReturnType<typeof startGatewayOnMock>>;
let holder: Browser;
let accountId = 0;
const keys: { id: number; key: string }[] = [];
const today = new Date().toISOString().slice(0, 10);
const nano = (usd: number) => Math.round(usd * 1e9);

beforeAll(async () => {
  rig = await startGatewayOnMock({ models: [model("alpha", 3), model("beta", 1)] });
  // Every answer reads 2,000 prompt tokens from the cache and writes 100.
  rig.up.setDefault({ kind: "text", text: "hello there", usage: { cacheRead: 2000, cacheWrite: 100 } });
  holder = await registeredBrowser(rig.gw);
  accountId = (await body(await holder.call("GET", "/api/me"))).id;
  for (const name of ["ci", "laptop"]) keys.push(await body(await holder.call("POST", "/api/keys", { name })));
  for (const [k, m] of [[0, "alpha"], [0, "alpha"], [1, "beta"]] as const) {
    const res = await postWithApiKey(rig.gw, "/v1/messages", messagesBody(16, m), keys[k]!.key);
    expect(res.status).toBe(200);
    await res.arrayBuffer();
  }
});

afterAll(() => rig.stop());

const summary = async (query = "") => body<UsageSummary>(await holder.call("GET", `/api/usage/summary${query}`));

describe("GET /api/usage/summary", () => {
  it("shows today, the last 7 days and this month as the exact sums of the ledger's charges", async () => {
    const charges = ledgerRows(rig.gw, accountId).filter((r) => r.kind === "charge");
    expect(charges).toHaveLength(3);
    const charged = -charges.reduce((n, r) => n + r.amount_nano, 0);
    expect(charged).toBeGreaterThan(0);
    const s = await summary();
    expect([nano(s.spend.today_usd), nano(s.spend.last_7_days_usd), nano(s.spend.this_month_usd), nano(s.period.cost_usd)]).toEqual([charged, charged, charged, charged]);
    expect(s.period.requests).toBe(3);
  });

  it("stacks each day's spend by model and by key, the biggest first, over 30 days ending today", async () => {
    const s = await summary();
    expect(s.days).toHaveLength(30);
    expect(s.days.at(-1)).toBe(today);
    expect(s.by_model.map((x) => x.label)).toEqual(["alpha", "beta"]);
    expect(s.by_key.map((x) => x.label)).toEqual(["ci", "laptop"]);
    for (const series of [s.by_model, s.by_key]) {
      expect(series.every((x) => x.cost_usd.slice(0, -1).every((v) => v === 0) && x.cost_usd.at(-1) === x.total_usd)).toBe(true);
      expect(nano(series[0]!.total_usd) + nano(series[1]!.total_usd)).toBe(nano(s.period.cost_usd));
    }
  });

  it("counts cache reads and writes and what the reads saved at the model's input price", async () => {
    const s = await summary();
    expect([s.period.cache_read_tokens, s.period.cache_write_tokens]).toEqual([6000, 300]);
    // Anthropic's cache reads are 0.1 x input: alpha (3 USD/M) saves 2.7 USD/M on 4,000 tokens, beta 0.9 USD/M on 2,000.
    expect(nano(s.period.cache_saved_usd)).toBe(4000 * 2700 + 2000 * 900);
  });

  it("follows the model, key and date filters", async () => {
    const alpha = await summary("?model=alpha");
    expect(alpha.by_key.map((x) => x.label)).toEqual(["ci"]);
    expect(alpha.spend.today_usd).toBe(alpha.by_model[0]!.total_usd);
    const laptop = await summary(`?key_id=${keys[1]!.id}`);
    expect(laptop.by_model.map((x) => x.label)).toEqual(["beta"]);
    const past = await summary("?from=2026-01-01&to=2026-01-07");
    expect([past.days.length, past.by_model, past.period.cost_usd]).toEqual([7, [], 0]);
    // The fixed periods end today whatever the chosen days.
    expect(past.spend.today_usd).toBe((await summary()).spend.today_usd);
  });

  it("answers a fresh account with zeros and no series", async () => {
    const fresh = await registeredBrowser(rig.gw);
    const s = await body<UsageSummary>(await fresh.call("GET", "/api/usage/summary"));
    expect([s.spend, s.period.cost_usd, s.by_model, s.by_key]).toEqual([{ today_usd: 0, last_7_days_usd: 0, this_month_usd: 0 }, 0, [], []]);
  });

  it("refuses a bad filter with 400 invalid_request naming it", async () => {
    for (const [query, field] of [["?from=yesterday", "from"], ["?to=2026-02-30", "to"], ["?from=2026-03-02&to=2026-03-01", "from"], ["?from=2024-01-01&to=2026-01-01", "from"], ["?by=model", "by"]]) {
      expect(await refusedWith(await holder.call("GET", `/api/usage/summary${query}`), 400, "invalid_request")).toStartWith(`${field}:`);
    }
  });

  it("refuses another account's key as 404 key_not_found", async () => {
    const other = await registeredBrowser(rig.gw);
    await refusedWith(await other.call("GET", `/api/usage/summary?key_id=${keys[0]!.id}`), 404, "key_not_found");
  });
});
