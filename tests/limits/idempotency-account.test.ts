import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { FIXED_MODEL, GATEWAY_ENGINES, type EngineGateway } from "../support/engine-gateway.ts";
import { stopEngines } from "../support/engines.ts";
import type { MockUpstream } from "../support/mock-upstream.ts";
import { messagesBody, postWithApiKey } from "../support/keyed.ts";

// This file's PostgreSQL server (support/engines.ts), after the gateways' own afterAll.
afterAll(stopEngines);
setDefaultTimeout(60_000);

// An Idempotency-Key belongs to the account (docs/api.md#rules): a client that rotates its
// key, or spreads retries over two keys of one account, must not run the request twice.

const BODY = { ...messagesBody(16, "fixed", "hi"), stream: false };
let n = 0;

for (const engine of GATEWAY_ENGINES) {
  describe(`on ${engine.name}`, () => {
    let gw: EngineGateway;
    let up: MockUpstream;
    let stop: () => Promise<void>;
    beforeAll(async () => {
      ({ gw, up, stop } = await engine.start({
        models: [FIXED_MODEL],
      }));
    });
    afterAll(() => stop());

    const charges = async (accountId: number) => (await gw.ledgerRows(accountId)).filter((r) => r.kind === "charge").length;
    const upstreamCalls = () => up.hits["POST /v1/messages"] ?? 0;

    it("runs once for the same Idempotency-Key and body sent on two keys of one account, replaying on the second", async () => {
      const a = await gw.account(5);
      const other = await gw.key(a.accountId);
      const headers = { "idempotency-key": `acct-${++n}` };
      const before = upstreamCalls();
      const first = await postWithApiKey(gw, "/v1/messages", BODY, a.key, headers);
      const firstBody = (await first.json()) as { id: string };
      const second = await postWithApiKey(gw, "/v1/messages", BODY, other.key, headers);
      expect(second.status).toBe(200);
      expect(second.headers.get("idempotent-replayed")).toBe("true");
      expect(((await second.json()) as { id: string }).id).toBe(firstBody.id);
      expect(upstreamCalls() - before).toBe(1);
      expect(await charges(a.accountId)).toBe(1);
    });

    it("keeps two accounts' uses of the same Idempotency-Key apart", async () => {
      const a = await gw.account(5);
      const b = await gw.account(5);
      const headers = { "idempotency-key": `acct-${++n}` };
      const before = upstreamCalls();
      await (await postWithApiKey(gw, "/v1/messages", BODY, a.key, headers)).text();
      const other = await postWithApiKey(gw, "/v1/messages", BODY, b.key, headers);
      expect(other.status).toBe(200);
      expect(other.headers.get("idempotent-replayed")).toBeNull();
      await other.text();
      expect(upstreamCalls() - before).toBe(2);
      expect(await charges(a.accountId)).toBe(1);
      expect(await charges(b.accountId)).toBe(1);
    });
  });
}
