import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { startGatewayOnMock, type TestGateway } from "../support/gateway.ts";
import { postWithApiKey } from "../support/keyed.ts";
import { expectError } from "../support/errors.ts";
import type { MockUpstream } from "../support/mock-upstream.ts";
import { priceAsks } from "../../src/relay/hold-size.ts";

// The hold covers the worst class a request can incur (docs/pricing.md, "The hold"): a balance that
// covers the plain hold but not the dearer one the body asks for is refused before any upstream call.

const SONNET = {
  pricing: { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75, cache_write_1h: 6, web_search: 10 },
  pricing_tiers: [{ above_input_tokens: 200000, input: 6, output: 22.5 }],
};
const GPT5 = {
  pricing: { input: 1.25, output: 10, cache_read: 0.125 },
  service_tiers: { flex: { input: 0.625, output: 5 }, priority: { input: 2.5, output: 20 } },
};
// A model per test: no test's calibration samples size another's hold.
// Cache writes priced as input in the standard table, dearer only at the priority tier.
const GPT_PRIORITY_WRITE = { ...GPT5, service_tiers: { priority: { input: 2.5, output: 20, cache_write: 5 } } };
const ids = ["cache5m", "cache1h", "nocache", "tier", "search50", "search5", "gptprio", "gptdefault", "gptauto", "gptflex", "gptwrite", "gptwritenone"];
const models = ids.map((id) => ({
  id,
  modalities: ["text"],
  endpoints: ["messages", "chat.completions"],
  ...(id.startsWith("gptwrite") ? GPT_PRIORITY_WRITE : id.startsWith("gpt") ? GPT5 : SONNET),
  routes: [{ provider: id.startsWith("gpt") ? "openai" : "anthropic", model: `${id}-up` }],
}));

let up: MockUpstream;
let gw: TestGateway;
let stop: () => Promise<void>;
beforeAll(async () => {
  ({ up, gw, stop } = await startGatewayOnMock({ openai: true, models, limits: { default_rpm: 100_000 } }));
});
afterAll(() => stop());

/** A Messages body of about `tokens` estimated input tokens (4 ASCII bytes a token), its text block marked as `cache`. */
function cachedBody(model: string, tokens: number, cache?: object, extra: object = {}) {
  const block: Record<string, unknown> = { type: "text", text: "x".repeat(tokens * 4) };
  if (cache) block.cache_control = cache;
  return { model, max_tokens: 1, messages: [{ role: "user", content: [block] }], ...extra };
}

/** Sends `body` on an account of `usd` and returns the answer's status; a refusal leaves the balance as it was. */
async function statusOn(usd: number, path: string, body: object): Promise<number> {
  const a = await gw.account(usd);
  const before = gw.money(a.accountId).balance;
  up.script({ kind: "text", text: "ok", usage: { input: 10, output: 1 } });
  const res = await postWithApiKey(gw, path, body, a.key);
  if (res.status === 402) {
    await expectError(res, 402, "insufficient_balance");
    expect(gw.money(a.accountId).balance).toBe(before);
  } else await res.text();
  return res.status;
}

describe("a body asking for caching is held at the cache-write price", () => {
  // 100 k tokens held: 0.30 USD at input, 0.375 at the 5-minute write price, 0.60 at the 1-hour one.
  it("a 5-minute cache_control passes on 0.50 USD", async () => {
    expect(await statusOn(0.5, "/v1/messages", cachedBody("cache5m", 100_000, { type: "ephemeral" }))).toBe(200);
  });
  it("ttl 1h is refused 402 on the same 0.50 USD", async () => {
    expect(await statusOn(0.5, "/v1/messages", cachedBody("cache1h", 100_000, { type: "ephemeral", ttl: "1h" }))).toBe(402);
  });
  it("no cache_control is held at the input price: passes on 0.35 USD", async () => {
    expect(await statusOn(0.35, "/v1/messages", cachedBody("nocache", 100_000))).toBe(200);
  });
});

describe("an estimate past a tier's threshold is held at the tier's prices", () => {
  it("250 k tokens: 0.75 USD at base, 1.50 at the tier: refused on 1.00 USD", async () => {
    expect(await statusOn(1, "/v1/messages", cachedBody("tier", 250_000))).toBe(402);
  });
});

describe("a web search tool is held for its max_uses", () => {
  const tools = (max: number) => ({ tools: [{ type: "web_search_20250305", name: "web_search", max_uses: max }] });
  it("50 searches (0.50 USD) are refused on 0.30 USD", async () => {
    expect(await statusOn(0.3, "/v1/messages", cachedBody("search50", 10, undefined, tools(50)))).toBe(402);
  });
  it("5 searches (0.05 USD) pass on 0.30 USD", async () => {
    expect(await statusOn(0.3, "/v1/messages", cachedBody("search5", 10, undefined, tools(5)))).toBe(200);
  });
});

describe("a request that may be answered at the priority tier is held at its prices", () => {
  // 100,000 output tokens: 1.00 USD at base, 2.00 at priority.
  const chat = (model: string, tier?: string) => ({
    model,
    max_tokens: 100_000,
    messages: [{ role: "user", content: "hi" }],
    ...(tier ? { service_tier: tier } : {}),
  });
  it("service_tier priority is refused on 1.50 USD", async () => {
    expect(await statusOn(1.5, "/v1/chat/completions", chat("gptprio", "priority"))).toBe(402);
  });
  it("service_tier auto is held as priority (the project's default may be priority)", async () => {
    expect(await statusOn(1.5, "/v1/chat/completions", chat("gptauto"))).toBe(402);
  });
  it("service_tier default passes on 1.50 USD", async () => {
    expect(await statusOn(1.5, "/v1/chat/completions", chat("gptdefault", "default"))).toBe(200);
  });
  it("service_tier flex passes on 1.50 USD", async () => {
    expect(await statusOn(1.5, "/v1/chat/completions", chat("gptflex", "flex"))).toBe(200);
  });
});

describe("a cache write dearer than input in any of a model's tables raises the hold", () => {
  // 100 k tokens held at the priority input: 0.25 USD; at its cache write: 0.50 USD.
  const chat = (model: string, cache: boolean) => ({
    model,
    max_tokens: 1,
    messages: [{ role: "user", content: [{ type: "text", text: "x".repeat(400_000), ...(cache ? { cache_control: { type: "ephemeral" } } : {}) }] }],
  });
  it("a cache_control on a model dearer to write only at priority is refused on 0.40 USD", async () => {
    expect(await statusOn(0.4, "/v1/chat/completions", chat("gptwrite", true))).toBe(402);
  });
  it("the same body without cache_control passes on 0.40 USD", async () => {
    expect(await statusOn(0.4, "/v1/chat/completions", chat("gptwritenone", false))).toBe(200);
  });
});

describe("the hold's scan of the body's bytes for cache_control", () => {
  // The bytes a handler holds may be a view into a larger buffer (a read in chunks, a subarray).
  const view = (text: string) => {
    const whole = new TextEncoder().encode(`${"#".repeat(64)}${text}`);
    return whole.subarray(64);
  };
  const cached = '{"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral","ttl":"1h"}}]}]}';

  it("finds the key in a view that starts inside its buffer", () => {
    expect(priceAsks(JSON.parse(cached), view(cached)).cache).toBe("1h");
  });
  it("finds the key spelled with a \\u escape", () => {
    const escaped = cached.replace('"cache_control"', '"\\u0063ache_control"');
    expect(priceAsks(JSON.parse(escaped), view(escaped)).cache).toBe("1h");
  });
  it("does not read the bytes before the view: a key there is no ask", () => {
    const plain = '{"messages":[{"role":"user","content":"hi"}]}';
    const whole = new TextEncoder().encode(`"cache_control"${plain}`);
    expect(priceAsks(JSON.parse(plain), whole.subarray(15)).cache).toBe("none");
  });
});
