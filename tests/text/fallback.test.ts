import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { anthropicError } from "../support/mock-upstream.ts";
import { PRICES } from "../support/prices.ts";
import { startTextRig, type TextRig } from "../support/text-rig.ts";
import { errorOf } from "../support/errors.ts";
import { postWithApiKey } from "../support/keyed.ts";

// "twin" tries the Anthropic mock first, then the OpenAI mock (by translation).
let rig: TextRig;
beforeAll(async () => {
  rig = await startTextRig([
    {
      id: "twin",
      modalities: ["text"],
      endpoints: ["messages", "chat.completions"],
      pricing: PRICES,
      routes: [
        { provider: "anthropic", model: "first" },
        { provider: "openai", model: "second" },
      ],
    },
  ]);
});
afterAll(() => rig.stop());

const post = (path: string, body: unknown, key = rig.acct.key) => postWithApiKey(rig.gw, path, body, key);

const ask = (extra: Record<string, unknown> = {}) => ({ model: "twin", max_tokens: 50, messages: [{ role: "user", content: "hi" }], ...extra });

describe("fallback before the first byte", () => {
  it("serves from the second route when the first answers 500", async () => {
    rig.up.script({ kind: "error", status: 500 }, { kind: "text", text: "from second" });
    const msg = await rig.anthropic().messages.create(ask() as never);
    expect((msg as { content: { text: string }[] }).content[0]!.text).toBe("from second");
  });

  it("serves a stream from the second route when the first drops before its first event", async () => {
    rig.up.script({ kind: "drop_before_headers" }, { kind: "text", text: "streamed second" });
    const msg = await rig.anthropic().messages.stream(ask() as never).finalMessage();
    expect((msg.content[0] as { text: string }).text).toBe("streamed second");
  });

  it("serves from the second route when the first answers 529 overloaded", async () => {
    rig.up.script({ kind: "error", status: 529 }, { kind: "text", text: "ok" });
    const res = await post("/v1/messages", ask());
    expect(res.status).toBe(200);
  });

  it("passes the vendor's 529 overloaded_error through when every route is overloaded", async () => {
    const a = await rig.gw.account(1);
    rig.up.script({ kind: "error", status: 529 });
    const res = await post("/v1/messages", ask({ model: "claude-native" }), a.key);
    expect(res.status).toBe(529);
    const body = (await res.json()) as { error: Record<string, string> };
    expect(body.error.type).toBe("overloaded_error");
    expect(Object.keys(body.error).sort()).toEqual(["code", "message", "request_id", "type"]);
    expect(rig.gw.money(a.accountId).balance).toBe(1_000_000_000);
  });
});

describe("failures after the first byte", () => {
  it("ends a Messages stream with an error event and charges nothing", async () => {
    const a = await rig.gw.account(1);
    rig.up.script({ kind: "fail_mid_stream", afterEvents: 3, mode: "drop", content: { kind: "text", text: "a b c d e f", delayMs: 5 } });
    const res = await post("/v1/messages", ask({ model: "claude-native", stream: true }), a.key);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain("event: error");
    expect(text).not.toContain("message_stop");
    await Bun.sleep(20);
    const m = rig.gw.money(a.accountId);
    expect(m.balance).toBe(1_000_000_000);
    expect(m.openHolds).toBe(0);
  });

  it("ends a Chat stream with an error chunk, no [DONE], and charges nothing", async () => {
    const a = await rig.gw.account(1);
    rig.up.script({ kind: "fail_mid_stream", afterEvents: 2, mode: "error_event" });
    const res = await post("/v1/chat/completions", ask({ model: "gpt-native", stream: true }), a.key);
    const text = await res.text();
    expect(text).toContain('"error"');
    expect(text).not.toContain("[DONE]");
    await Bun.sleep(20);
    expect(rig.gw.money(a.accountId).balance).toBe(1_000_000_000);
  });

  it("does not switch routes once the first byte is out", async () => {
    const before = rig.up.requests.length;
    rig.up.script({ kind: "fail_mid_stream", afterEvents: 3, mode: "drop", content: { kind: "text", text: "a b c d e f", delayMs: 5 } });
    const res = await post("/v1/messages", ask({ stream: true }));
    await res.text();
    expect(rig.up.requests.length - before).toBe(1);
  });
});

describe("cancellation", () => {
  it("aborts the upstream request when the client goes away mid-stream, charging what was produced", async () => {
    const a = await rig.gw.account(1);
    rig.up.script({ kind: "slow_stream", events: 50, intervalMs: 20 });
    const ctrl = new AbortController();
    const res = await fetch(`${rig.gw.url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": a.key, "content-type": "application/json" },
      body: JSON.stringify(ask({ model: "claude-native", stream: true })),
      signal: ctrl.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    await reader.read();
    ctrl.abort();
    const rec = rig.up.requests.at(-1)!;
    const outcome = await Promise.race([rec.settled, Bun.sleep(2000).then(() => "timeout")]);
    expect(outcome).toBe("aborted");
    await Bun.sleep(20);
    const m = rig.gw.money(a.accountId);
    expect(m.openHolds).toBe(0);
    expect(m.balance).toBeLessThan(1_000_000_000);
    expect(m.ledgerSum).toBe(m.balance);
  });
});

describe("circuit breaker", () => {
  it("skips a route that keeps failing and reports it on /status", async () => {
    const rig2 = await startTextRig();
    try {
      for (let i = 0; i < 3; i++) {
        rig2.up.script({ kind: "error", status: 500 });
        const r = await fetch(`${rig2.gw.url}/v1/messages`, {
          method: "POST",
          headers: { "x-api-key": rig2.acct.key, "content-type": "application/json" },
          body: JSON.stringify(ask({ model: "claude-native" })),
        });
        expect(r.status).toBe(502);
        expect((await errorOf(r)).code).toBe("upstream_unavailable");
      }
      const hits = rig2.up.requests.length;
      const res = await fetch(`${rig2.gw.url}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": rig2.acct.key, "content-type": "application/json" },
        body: JSON.stringify(ask({ model: "claude-native" })),
      });
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).not.toBeNull();
      expect((await errorOf(res)).code).toBe("no_eligible_route");
      expect(rig2.up.requests.length).toBe(hits);
      const status = (await (await fetch(`${rig2.gw.url}/status`)).json()) as { status: string; models: { id: string; state: string }[] };
      expect(status.status).toBe("degraded");
      expect(status.models.find((m) => m.id === "claude-native")!.state).toBe("unavailable");
    } finally {
      await rig2.stop();
    }
  });
});
