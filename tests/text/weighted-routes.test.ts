import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { startGatewayOnMock } from "../support/gateway.ts";
import type { MockUpstream } from "../support/mock-upstream.ts";
import type { TestGateway } from "../support/gateway.ts";
import { messagesBody, postWithApiKey } from "../support/keyed.ts";
import { PRICES } from "../support/prices.ts";

// Weighted routes (docs/operations.md#several-keys-and-weighted-routes): routes with a weight share
// a model's traffic in proportion; routes without one are fallbacks, in their listed order, once the
// weighted ones fail; a route whose keys all rest is skipped.

// 1,000 requests through the server: generous on a loaded machine.
setDefaultTimeout(120_000);

const model = (id: string, routes: Record<string, unknown>[]) => ({ id, modalities: ["text"], endpoints: ["messages"], pricing: PRICES, routes });

let up: MockUpstream;
let gw: TestGateway;
let stop: () => Promise<void>;
beforeAll(async () => {
  ({ up, gw, stop } = await startGatewayOnMock({
    limits: { default_rpm: 100_000 },
    providers: (u) => ["heavy", "light", "first", "second", "third", "rest-w", "rest-f"].map((id) => ({ id, kind: "anthropic", base_url: u.url, api_key: `sk-${id}-key` })),
    models: [
      model("shared", [
        { provider: "heavy", model: "heavy-up", weight: 3 },
        { provider: "light", model: "light-up", weight: 1 },
      ]),
      model("ordered", [
        { provider: "first", model: "weighted-up", weight: 1 },
        { provider: "second", model: "fallback-1" },
        { provider: "third", model: "fallback-2" },
      ]),
      model("skipping", [
        { provider: "rest-w", model: "resting-up", weight: 5 },
        { provider: "rest-f", model: "fallback-up" },
      ]),
    ],
  }));
});
afterAll(() => stop());

const ask = (m: string, key: string) => postWithApiKey(gw, "/v1/messages", messagesBody(5, m), key);
const upstreamModels = (n: number) => up.requests.slice(-n).map((r) => (r.body as { model: string }).model);

describe("weighted routes", () => {
  it("share 1,000 requests 3:1 between weights 3 and 1, within 2 %", async () => {
    const a = await gw.account(100);
    const before = up.requests.length;
    for (let i = 0; i < 1_000; i += 20) {
      const batch = await Promise.all(Array.from({ length: 20 }, () => ask("shared", a.key)));
      expect(batch.every((r) => r.status === 200)).toBe(true);
    }
    const used = up.requests.slice(before).map((r) => (r.body as { model: string }).model);
    const heavy = used.filter((m) => m === "heavy-up").length;
    expect(used.length).toBe(1_000);
    expect(heavy / 1_000).toBeWithin(0.73, 0.77);
  });

  it("tries the fallbacks in their listed order once the weighted route fails", async () => {
    const a = await gw.account(1);
    up.script({ kind: "error", status: 500 }, { kind: "error", status: 500 }, { kind: "text", text: "from the second fallback" });
    const res = await ask("ordered", a.key);
    expect(res.status).toBe(200);
    expect(upstreamModels(3)).toEqual(["weighted-up", "fallback-1", "fallback-2"]);
  });

  it("skips a weighted route whose keys all rest, without calling it", async () => {
    const a = await gw.account(1);
    up.script({ kind: "error", status: 529, headers: { "retry-after": "60" } });
    expect((await ask("skipping", a.key)).status).toBe(200);
    expect(upstreamModels(2)).toEqual(["resting-up", "fallback-up"]);
    expect((await ask("skipping", a.key)).status).toBe(200);
    expect(upstreamModels(1)).toEqual(["fallback-up"]);
  });
});
