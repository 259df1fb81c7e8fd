import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { startGatewayOnMock, startTestGateway, type TestGateway } from "../support/gateway.ts";
import { messagesBody, postWithApiKey, sqlGet } from "../support/keyed.ts";
import { errorOf } from "../support/errors.ts";
import type { MockUpstream } from "../support/mock-upstream.ts";
import { sse } from "../support/sse.ts";

// Issue 14, the money path: each hold resolves once, on every path, and each of these faults, found
// under attack, charges what the rules say (docs/database.md, "Billing rules").

const PRICES = { input: 3, output: 15 };
const model = (id: string) => ({ id, modalities: ["text"], endpoints: ["messages", "chat.completions"], pricing: PRICES, routes: [{ provider: "anthropic", model: `${id}-up` }] });

let up: MockUpstream;
let gw: TestGateway;
let stop: () => Promise<void>;
beforeAll(async () => {
  ({ up, gw, stop } = await startGatewayOnMock({ models: [model("claude-m")], limits: { default_rpm: 10_000 } }));
});
afterAll(() => stop());

const logOf = (requestId: string) =>
  sqlGet<{ status: number; error_code: string | null; output_tokens: number | null; cost_nano: number }>(
    gw,
    "SELECT status, error_code, output_tokens, cost_nano FROM request_logs WHERE request_id = ?",
    requestId,
  );
const chargeOf = (requestId: string) =>
  sqlGet<{ c: number | null }>(gw, "SELECT -sum(amount_nano) AS c FROM ledger_entries WHERE request_id = ?", requestId).c ?? 0;

async function settledBooks(accountId: number) {
  for (let i = 0; i < 50 && gw.money(accountId).openHolds > 0; i++) await Bun.sleep(10);
  const m = gw.money(accountId);
  expect(m.openHolds).toBe(0);
  expect(m.balance).toBe(m.ledgerSum);
  return m;
}

describe("a Messages stream the client cancels", () => {
  // item 1: message_start's output_tokens: 1 won over the delivered text, cutting the bill by ~70 %.
  it("right after content_block_stop is billed the output it delivered, not message_start's count of 1", async () => {
    const a = await gw.account(10);
    const text = "x".repeat(800);
    up.script({ kind: "text", text, chunks: 4, delayMs: 150 });
    const ctl = new AbortController();
    const res = await postWithApiKey(gw, "/v1/messages", { ...messagesBody(1000, "claude-m"), stream: true }, a.key, { signal: ctl.signal } as never);
    const requestId = res.headers.get("x-gateway-request-id")!;
    const reader = res.body!.getReader();
    let seen = "";
    while (!seen.includes("content_block_stop")) seen += new TextDecoder().decode((await reader.read()).value);
    expect(seen).not.toContain("message_delta");
    await reader.cancel();
    await settledBooks(a.accountId);
    const log = logOf(requestId);
    expect(log.error_code).toBe("client_cancelled");
    expect(log.output_tokens).toBe(200); // 800 characters delivered, 4 a token
    expect(chargeOf(requestId)).toBe(log.cost_nano);
  });
});

describe("a usage priced above 2^53 nano-dollars", () => {
  // item 2: a RangeError before the hold was let go: 500, nothing charged, the hold leaked.
  it("charges what the balance allows, records the shortfall and leaves no hold", async () => {
    const a = await gw.account(2);
    up.script({ kind: "text", text: "ok", usage: { input: 1, output: 1e12, cacheRead: 0, cacheWrite: 0 } });
    const res = await postWithApiKey(gw, "/v1/messages", messagesBody(100, "claude-m"), a.key);
    expect(res.status).toBe(200);
    await res.text();
    const m = await settledBooks(a.accountId);
    expect(m.balance).toBe(0);
    const row = sqlGet<{ amount_nano: number; shortfall_nano: number }>(gw, "SELECT amount_nano, shortfall_nano FROM ledger_entries WHERE request_id = ?", res.headers.get("x-gateway-request-id")!);
    expect(row.amount_nano).toBe(-2_000_000_000);
    expect(row.shortfall_nano).toBeGreaterThan(0);
  });
});

describe("a stream whose upstream keeps the connection open after message_stop", () => {
  // item 5: the answer waited for the upstream's EOF, and a kill meanwhile lost its charge.
  it("ends at message_stop, and its charge is in the ledger before the final usage event arrives", async () => {
    const a = await gw.account(10);
    const frames = [
      ["message_start", { type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", model: "m", content: [], stop_reason: null, usage: { input_tokens: 10, output_tokens: 1 } } }],
      ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
      ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "hello there" } }],
      ["content_block_stop", { type: "content_block_stop", index: 0 }],
      ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 3 } }],
      ["message_stop", { type: "message_stop" }],
    ];
    const body = frames.map(([e, d]) => sse(e as string, d)).join("");
    // All events, then the connection stays open (until the test ends).
    const open = new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode(body)) });
    up.script({ kind: "raw", status: 200, headers: { "content-type": "text/event-stream" }, body: undefined });
    const lingering = Bun.serve({ port: 0, hostname: "127.0.0.1", idleTimeout: 0, fetch: () => new Response(open, { headers: { "content-type": "text/event-stream" } }) });
    const g2 = await startTestGateway({
      providers: [{ id: "anthropic", kind: "anthropic", base_url: `http://127.0.0.1:${lingering.port}`, api_key: "k" }],
      models: [model("claude-m")],
    });
    up.reset();
    const a2 = await g2.account(10);
    const started = performance.now();
    const res = await postWithApiKey(g2, "/v1/messages", { ...messagesBody(100, "claude-m"), stream: true }, a2.key);
    const requestId = res.headers.get("x-gateway-request-id")!;
    const reader = res.body!.getReader();
    let seen = "";
    let chargedWhenUsageArrived: number | null = null;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      seen += new TextDecoder().decode(value);
      if (chargedWhenUsageArrived === null && seen.includes('"cost_usd"')) {
        chargedWhenUsageArrived = (g2.services.db.$client.query("SELECT -sum(amount_nano) AS c FROM ledger_entries WHERE request_id = ?").get(requestId) as { c: number | null }).c;
      }
    }
    expect(seen).toContain("event: message_stop");
    expect(performance.now() - started).toBeLessThan(3000);
    expect(chargedWhenUsageArrived).toBeGreaterThan(0);
    void a;
    await g2.stop();
    lingering.stop(true);
  });
});

describe("an answer whose final usage cannot be charged", () => {
  it("never shows cost_usd for a charge that did not commit: the stream ends in an error, free", async () => {
    const a = await gw.account(10);
    const before = gw.money(a.accountId).balance;
    up.script({ kind: "text", text: "hello", chunks: 2 });
    gw.services.db.$client.exec("CREATE TRIGGER no_charge BEFORE INSERT ON ledger_entries WHEN NEW.kind = 'charge' BEGIN SELECT RAISE(ABORT, 'disk says no'); END");
    try {
      const res = await postWithApiKey(gw, "/v1/messages", { ...messagesBody(100, "claude-m"), stream: true }, a.key);
      const text = await res.text();
      expect(text).not.toContain("cost_usd");
      expect(text).toContain("event: error");
    } finally {
      gw.services.db.$client.exec("DROP TRIGGER no_charge");
    }
    const m = await settledBooks(a.accountId);
    expect(m.balance).toBe(before);
  });
});

describe("Idempotency-Key on a stream that failed mid-answer", () => {
  // item 12: the failed stream was stored and replayed for 24 h.
  it("is not replayed: the retry runs again", async () => {
    const a = await gw.account(10);
    const headers = { "idempotency-key": `idem-${Date.now()}` };
    const body = { ...messagesBody(100, "claude-m"), stream: true };
    up.script({ kind: "fail_mid_stream", afterEvents: 3, mode: "drop" });
    const first = await postWithApiKey(gw, "/v1/messages", body, a.key, headers);
    expect(await first.text()).toContain("event: error");
    up.script({ kind: "text", text: "second try" });
    const second = await postWithApiKey(gw, "/v1/messages", body, a.key, headers);
    expect(second.headers.get("idempotent-replayed")).toBeNull();
    expect(await second.text()).toContain("event: message_stop");
    await settledBooks(a.accountId);
  });
});

describe("a request that fails after its reserve", () => {
  it("answers with the error, keeps no hold and charges nothing", async () => {
    const a = await gw.account(10);
    up.script({ kind: "error", status: 500 }, { kind: "error", status: 500 });
    const res = await postWithApiKey(gw, "/v1/messages", messagesBody(100, "claude-m"), a.key);
    expect(res.status).toBe(502);
    expect((await errorOf(res)).code).toBe("upstream_unavailable");
    const m = await settledBooks(a.accountId);
    expect(m.balance).toBe(10_000_000_000);
  });
});

describe("images", () => {
  let img: TestGateway;
  let imgUp: MockUpstream;
  let stopImg: () => Promise<void>;
  beforeAll(async () => {
    const r = await startGatewayOnMock({
      openai: true,
      limits: { default_rpm: 10_000 },
      models: [{ id: "img-1", modalities: ["image"], endpoints: ["images.generations"], pricing: { per_image: 0.04 }, routes: [{ provider: "openai", model: "img-up" }] }],
    });
    ({ gw: img, up: imgUp, stop: stopImg } = r);
  });
  afterAll(() => stopImg());

  // item 9: 25 images for n = 1 charged 1 USD against a 0.04 hold.
  it("charges at most the n images asked for, and returns that many", async () => {
    const a = await img.account(5);
    imgUp.script({ kind: "images", n: 25 });
    const res = await postWithApiKey(img, "/v1/images/generations", { model: "img-1", prompt: "a cat", n: 1 }, a.key);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: unknown[]; usage: { cost_usd: number } };
    expect(body.data).toHaveLength(1);
    expect(body.usage.cost_usd).toBe(0.04);
    const m = img.money(a.accountId);
    expect(m.balance).toBe(5_000_000_000 - 40_000_000);
  });

  // item 13: a dropped answer after the provider accepted the request gave 500 (or a retry elsewhere).
  it("answers 502 ambiguous_upstream_result, not retried and not charged, when the answer is cut after the headers", async () => {
    let hits = 0;
    const cutting = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch() {
        hits++;
        const body = new ReadableStream({
          async pull(c) {
            c.enqueue(new TextEncoder().encode('{"created":1,"data":[{"b64_json":"iVBO'));
            await Bun.sleep(20);
            c.error(new Error("connection lost"));
          },
        });
        return new Response(body, { headers: { "content-type": "application/json" } });
      },
    });
    const g3 = await startTestGateway({
      providers: [{ id: "openai", kind: "openai", base_url: `http://127.0.0.1:${cutting.port}/v1`, api_key: "k" }],
      models: [
        { id: "img-1", modalities: ["image"], endpoints: ["images.generations"], pricing: { per_image: 0.04 }, routes: [{ provider: "openai", model: "a" }, { provider: "openai", model: "b" }] },
      ],
    });
    try {
      const a = await g3.account(5);
      const res = await postWithApiKey(g3, "/v1/images/generations", { model: "img-1", prompt: "a cat", n: 1 }, a.key);
      expect(res.status).toBe(502);
      expect((await errorOf(res)).code).toBe("ambiguous_upstream_result");
      expect(hits).toBe(1);
      expect(g3.money(a.accountId)).toMatchObject({ balance: 5_000_000_000, openHolds: 0 });
    } finally {
      await g3.stop();
      cutting.stop(true);
    }
  });
});
