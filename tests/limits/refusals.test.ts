import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { events } from "../../src/core/events.ts";
import { REFUSALS_PER_MINUTE, RefusalGate } from "../../src/limits/refusals.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { getWithKey, postWithApiKey, sqlGet } from "../support/keyed.ts";
import { errorOf } from "../support/errors.ts";

// The floods below send hundreds of requests; a loaded 2-core machine needs more than 5 s for them.
setDefaultTimeout(30_000);

// Issue 14, item 11: refusals without a valid key (401, 404 on /v1) write a request_logs row only
// while their address has budget; past it they get 429 rate_limit with Retry-After and no row.
// Valid keys are never affected.

const ask = { model: "demo-text-1", max_tokens: 8, messages: [{ role: "user", content: "hi" }] };
const BAD = "gk_sk_this-key-does-not-exist-0000000000000";

/** Sends `total` requests, `parallel` at a time; returns how many got each status. */
async function flood(total: number, parallel: number, send: () => Promise<Response>): Promise<Record<number, number>> {
  const statuses: Record<number, number> = {};
  let left = total;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (left-- > 0) {
        const res = await send();
        await res.arrayBuffer();
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      }
    }),
  );
  return statuses;
}

const rowsWith = (gw: TestGateway, status: number) => sqlGet<{ n: number }>(gw, "SELECT count(*) AS n FROM request_logs WHERE status = ?", status).n;

describe("a flood of bad-key requests", () => {
  let gw: TestGateway;
  let valid: string;
  let statuses: Record<number, number>;
  beforeAll(async () => {
    gw = await startTestGateway({ limits: { default_rpm: 100_000 } });
    valid = (await gw.account(5)).key;
    statuses = await flood(3000, 32, () => postWithApiKey(gw, "/v1/chat/completions", ask, BAD));
  });
  afterAll(() => gw.stop());

  it("writes a bounded number of request_logs rows, not one per request", () => {
    expect(statuses[401]! + statuses[429]!).toBe(3000);
    // The budget, plus what was already under way when it ran out, plus a second's refill.
    expect(rowsWith(gw, 401)).toBeLessThanOrEqual(REFUSALS_PER_MINUTE + 32 + 2);
    expect(rowsWith(gw, 429)).toBe(0);
  });

  it("answers the rest 429 rate_limit with Retry-After", async () => {
    const res = await postWithApiKey(gw, "/v1/chat/completions", ask, BAD);
    expect(res.status).toBe(429);
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(res.headers.get("x-gateway-request-id")).toStartWith("gw_");
    expect(await errorOf(res)).toMatchObject({ type: "rate_limit", code: "rate_limit" });
  });

  it("turns away a request without any key the same way", async () => {
    expect((await postWithApiKey(gw, "/v1/messages", ask, null)).status).toBe(429);
  });

  it("still serves a valid key from the same address", async () => {
    const res = await postWithApiKey(gw, "/v1/chat/completions", ask, valid);
    expect(res.status).toBe(200);
    expect((await getWithKey(gw, "/v1/me", valid)).status).toBe(200);
  });

  it("still answers a valid key's unknown path with 404", async () => {
    expect((await getWithKey(gw, "/v1/nope", valid)).status).toBe(404);
  });
});

describe("a flood of unknown /v1 paths without a key", () => {
  let gw: TestGateway;
  let statuses: Record<number, number>;
  beforeAll(async () => {
    gw = await startTestGateway();
    statuses = await flood(1500, 32, () => fetch(`${gw.url}/v1/nope`));
  });
  afterAll(() => gw.stop());

  it("writes a bounded number of 404 rows and answers the rest 429", () => {
    expect(statuses[404]! + statuses[429]!).toBe(1500);
    expect(statuses[429]).toBeGreaterThan(1000);
    expect(rowsWith(gw, 404)).toBeLessThanOrEqual(REFUSALS_PER_MINUTE + 32 + 2);
  });

  it("turns away unknown model ids on GET /v1/models/{id} too", async () => {
    expect((await fetch(`${gw.url}/v1/models/nope`)).status).toBe(429);
  });
});

describe("the refusal budget", () => {
  let t = 0;
  const gate = () => new RefusalGate({ perMinute: 3, perMinuteAll: 100, now: () => t });

  it("lets an address spend its budget, then names the wait in whole seconds", () => {
    const g = gate();
    for (let i = 0; i < 3; i++) {
      expect(g.waitFor("192.0.2.1")).toBeNull();
      g.spend("192.0.2.1");
    }
    expect(g.waitFor("192.0.2.1")).toBe(20);
    t += 20_000;
    expect(g.waitFor("192.0.2.1")).toBeNull();
  });

  it("keeps each address's budget its own", () => {
    const g = gate();
    for (let i = 0; i < 3; i++) g.spend("192.0.2.1");
    expect(g.waitFor("192.0.2.1")).not.toBeNull();
    expect(g.waitFor("192.0.2.2")).toBeNull();
  });

  it("shares one budget across every address against a flood from many", () => {
    const g = new RefusalGate({ perMinute: 3, perMinuteAll: 5, now: () => t });
    for (let i = 0; i < 5; i++) g.spend(`198.51.100.${i}`);
    expect(g.waitFor("203.0.113.9")).not.toBeNull();
  });

  it("writes the refusals it did not log as one operator event per window, busiest address first", () => {
    const lines: Record<string, any>[] = [];
    const restore = events.redirect((line) => lines.push(JSON.parse(line)));
    try {
      const g = gate();
      for (let i = 0; i < 7; i++) g.refuse("192.0.2.1", 1);
      g.refuse("192.0.2.2", 1);
      g.summarize();
      g.summarize();
    } finally {
      restore();
    }
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ event: "refusals_summarized", refused: 8, addresses: 2, top: [{ ip: "192.0.2.1", refused: 7 }, { ip: "192.0.2.2", refused: 1 }] });
  });
});
