import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import type { UsageSummary } from "../../src/http/api-schemas.ts";
import { GATEWAY_ENGINES, type EngineGateway } from "../support/engine-gateway.ts";
import { stopEngines } from "../support/engines.ts";
import { messagesBody, postWithApiKey } from "../support/keyed.ts";
import { Browser } from "./support.ts";

// This file's PostgreSQL server (support/engines.ts), after the gateways' own afterAll.
afterAll(stopEngines);
setDefaultTimeout(60_000);

// GET /api/usage/summary (docs/dashboard.md#overview) over HTTP on both engines: requests on two
// models with two keys through /v1 give the same figures, equal to the ledger's charges.

const model = (id: string, input: number) => ({ id, modalities: ["text"], endpoints: ["messages"], pricing: { input, output: 15 }, routes: [{ provider: "anthropic", model: id }] });

for (const engine of GATEWAY_ENGINES) {
  describe(`GET /api/usage/summary on ${engine.name}`, () => {
    let gw: EngineGateway;
    let stop: () => Promise<void>;
    beforeAll(async () => {
      let up;
      ({ gw, up, stop } = await engine.start({ models: [model("alpha", 3), model("beta", 1)] }));
      up.setDefault({ kind: "text", text: "hello there", usage: { cacheRead: 2000, cacheWrite: 100 } });
    });
    afterAll(() => stop());

    it("sums the account's charges per model and key, with the cache's tokens and saving", async () => {
      const { accountId, key, keyId } = await gw.account(1);
      const second = await gw.key(accountId);
      for (const [k, m] of [[key, "alpha"], [key, "alpha"], [second.key, "beta"]] as const) {
        const res = await postWithApiKey(gw, "/v1/messages", messagesBody(16, m), k);
        expect(res.status).toBe(200);
        await res.arrayBuffer();
      }
      const b = new Browser(gw.url);
      b.cookie = (await gw.services.sessions.open(accountId)).token;
      // The request log is written after the answer: asked until its three rows are in.
      let s: UsageSummary;
      for (let i = 0; ; i++) {
        s = (await (await b.call("GET", "/api/usage/summary")).json()) as UsageSummary;
        if (s.period.requests === 3 || i === 50) break;
        await Bun.sleep(100);
      }
      const charged = -(await gw.ledgerRows(accountId)).reduce((n, r) => n + (r.kind === "charge" ? r.amount_nano : 0), 0);
      const nano = (usd: number) => Math.round(usd * 1e9);
      expect([nano(s.spend.today_usd), nano(s.spend.this_month_usd), nano(s.period.cost_usd)]).toEqual([charged, charged, charged]);
      expect([s.period.requests, s.period.cache_read_tokens, s.period.cache_write_tokens, nano(s.period.cache_saved_usd)]).toEqual([3, 6000, 300, 4000 * 2700 + 2000 * 900]);
      expect(s.by_model.map((x) => x.label)).toEqual(["alpha", "beta"]);
      expect(s.by_key.map((x) => x.id)).toEqual([keyId, second.keyId]);
    });
  });
}
