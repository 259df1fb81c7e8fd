import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { FIXED_MODEL, GATEWAY_ENGINES, type EngineGateway } from "../support/engine-gateway.ts";
import { stopEngines } from "../support/engines.ts";
import { expectError } from "../support/errors.ts";
import type { MockUpstream } from "../support/mock-upstream.ts";
import { messagesBody, postWithApiKey } from "../support/keyed.ts";

// This file's PostgreSQL server (support/engines.ts), after the gateways' own afterAll.
afterAll(stopEngines);
setDefaultTimeout(60_000);

// docs/api.md#rules: the same Idempotency-Key and body replay the first answer without a second
// charge, on both engines, for a JSON answer and a stream, sent again or several at once; another
// body is 409 and charges nothing; a request refused for its balance runs when retried after a
// credit. After each, the account's balance is the sum of its ledger and no hold is left.

const JSON_BODY = { ...messagesBody(16, "fixed", "hi"), stream: false };
const STREAM_BODY = { ...messagesBody(16, "fixed", "hi"), stream: true };
let n = 0;

for (const engine of GATEWAY_ENGINES) {
  describe(`an idempotent /v1 request's charge on ${engine.name}`, () => {
    let gw: EngineGateway;
    let up: MockUpstream;
    let stop: () => Promise<void>;
    beforeAll(async () => {
      ({ gw, up, stop } = await engine.start({ models: [FIXED_MODEL] }));
    });
    afterAll(() => stop());

    const upstreamCalls = () => up.hits["POST /v1/messages"] ?? 0;

    /** The charge rows, and the books: balance = SUM(ledger), no hold left. */
    async function chargesOf(accountId: number): Promise<number[]> {
      const m = await gw.money(accountId);
      expect(m.balance).toBe(m.ledgerSum);
      expect(m.openHolds).toBe(0);
      expect(m.reserved).toBe(0);
      return (await gw.ledgerRows(accountId)).filter((r) => r.kind === "charge").map((r) => r.amount_nano);
    }

    for (const [what, body] of [["JSON answer", JSON_BODY], ["stream", STREAM_BODY]] as const) {
      it(`charges a ${what} sent twice in a row once, and replays the same bytes`, async () => {
        const a = await gw.account(5);
        const headers = { "idempotency-key": `books-${++n}` };
        const before = upstreamCalls();
        const first = await postWithApiKey(gw, "/v1/messages", body, a.key, headers);
        const firstText = await first.text();
        const second = await postWithApiKey(gw, "/v1/messages", body, a.key, headers);
        expect(second.headers.get("idempotent-replayed")).toBe("true");
        expect(await second.text()).toBe(firstText);
        expect(upstreamCalls() - before).toBe(1);
        expect(await chargesOf(a.accountId)).toHaveLength(1);
      });

      it(`charges a ${what} sent five times at once once: the others replay or are 409, never charged`, async () => {
        const a = await gw.account(5);
        const headers = { "idempotency-key": `books-${++n}` };
        const before = upstreamCalls();
        const answers = await Promise.all(Array.from({ length: 5 }, () => postWithApiKey(gw, "/v1/messages", body, a.key, headers)));
        for (const r of answers) {
          expect([200, 409]).toContain(r.status);
          await r.arrayBuffer();
        }
        expect(upstreamCalls() - before).toBe(1);
        expect(await chargesOf(a.accountId)).toHaveLength(1);
      });
    }

    it("refuses the same key with another body with 409 idempotency_conflict, charging nothing more", async () => {
      const a = await gw.account(5);
      const headers = { "idempotency-key": `books-${++n}` };
      await (await postWithApiKey(gw, "/v1/messages", JSON_BODY, a.key, headers)).text();
      const charged = await chargesOf(a.accountId);
      await expectError(await postWithApiKey(gw, "/v1/messages", { ...JSON_BODY, max_tokens: 17 }, a.key, headers), 409, "idempotency_conflict");
      expect(await chargesOf(a.accountId)).toEqual(charged);
    });

    it("runs a request refused for its balance when it is retried with the same key after a credit, charging it once", async () => {
      const a = await gw.account("0.000001");
      const headers = { "idempotency-key": `books-${++n}` };
      const refused = await postWithApiKey(gw, "/v1/messages", JSON_BODY, a.key, headers);
      expect(refused.status).toBe(402);
      await refused.text();
      expect(await chargesOf(a.accountId)).toEqual([]);
      await gw.services.ledger.credit(a.accountId, 1_000_000_000, "operator_credit");
      const retried = await postWithApiKey(gw, "/v1/messages", JSON_BODY, a.key, headers);
      expect(retried.status).toBe(200);
      expect(retried.headers.get("idempotent-replayed")).toBeNull();
      await retried.text();
      expect(await chargesOf(a.accountId)).toHaveLength(1);
    });
  });
}
