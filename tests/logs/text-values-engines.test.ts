import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { GATEWAY_ENGINES, type EngineGateway } from "../support/engine-gateway.ts";
import { stopEngines } from "../support/engines.ts";
import { postJson, hi } from "../support/http.ts";
import type { MockUpstream } from "../support/mock-upstream.ts";

// A request log row's text as the request brought it, on both databases. SQLite's TEXT holds any
// string; PostgreSQL's text refuses U+0000, and on PostgreSQL the row rides on the charge's own
// statement (store/ledger/postgres.ts): a refused row there is a refused charge.

afterAll(stopEngines);
setDefaultTimeout(60_000);

const CHAT_MODEL = { id: "chat-fixed", modalities: ["text"], endpoints: ["chat.completions"], pricing: { input: 3, output: 15 }, routes: [{ provider: "openai", model: "chat-fixed-upstream" }] };

for (const engine of GATEWAY_ENGINES) {
  describe(`on ${engine.name}`, () => {
    let gw: EngineGateway;
    let up: MockUpstream;
    let stop: () => Promise<void>;
    beforeAll(async () => {
      ({ gw, up, stop } = await engine.start({ models: [CHAT_MODEL], openai: true }));
    });
    afterAll(() => stop?.());

    it("charges and logs an answer whose service_tier holds a NUL character", async () => {
      const a = await gw.account(10);
      up.script({ kind: "text", text: "ok", usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, serviceTier: "flex\u0000x" } });
      const res = await postJson(gw, "/v1/chat/completions", a.key, { model: "chat-fixed", messages: hi, max_tokens: 20 });
      expect(res.status).toBe(200);
      await res.text();
      const id = res.headers.get("x-gateway-request-id")!;
      const cost = 10 * 3_000 + 5 * 15_000;
      expect(await gw.ledgerRows(a.accountId)).toContainEqual({ kind: "charge", amount_nano: -cost, shortfall_nano: 0, key_id: a.keyId, request_id: id });
      expect(await gw.numbers("SELECT count(*) AS n, max(cost_nano) AS cost FROM request_logs WHERE request_id = $1", id)).toEqual({ n: 1, cost });
    });
  });
}
