import { beforeAll, describe, expect, it } from "bun:test";
import { gatewayJson } from "../support/cli.ts";
import { balanceGuard, fundedGateway, hi, postJson } from "../support/http.ts";
import { expectError } from "../support/errors.ts";
import { events } from "../../src/core/events.ts";

// Spec, Errors and Limits: `gateway pause` (the CLI, another process, same database file) makes key
// routes answer 503 product_paused with Retry-After 60; `gateway resume` serves them again.

const t = fundedGateway();

const chat = () => postJson(t.gw, "/v1/chat/completions", t.a.key, { model: "demo", max_tokens: 16, messages: hi });
const cli = (command: "pause" | "resume") => gatewayJson<{ paused: boolean }>([command, "--db", t.gw.config.database]);

describe("gateway pause", () => {
  beforeAll(async () => {
    // Served first, so the server has read the switch before the CLI flips it.
    expect((await chat()).status).toBe(200);
    expect(await cli("pause")).toEqual({ paused: true });
  });

  it("makes key routes answer 503 product_paused with Retry-After: 60, charging nothing", async () => {
    const untouched = balanceGuard(t.gw, t.a.accountId);
    const res = await chat();
    await expectError(res, 503, "product_paused");
    expect(res.headers.get("retry-after")).toBe("60");
    untouched();
  });

  it("pauses every key route, GET /v1/me included", async () => {
    const res = await fetch(`${t.gw.url}/v1/me`, { headers: { authorization: `Bearer ${t.a.key}` } });
    await expectError(res, 503, "product_paused");
  });

  it("answers 503 before the key: a missing or unknown key gets product_paused, not 401", async () => {
    await expectError(await fetch(`${t.gw.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }), 503, "product_paused");
    await expectError(await postJson(t.gw, "/v1/chat/completions", "gk_sk_unknown", { model: "demo", max_tokens: 16, messages: hi }), 503, "product_paused");
  });

  it("answers 503 before the body: an oversized or malformed body gets product_paused, not 413 or 400", async () => {
    const big = "x".repeat(21 * 1024 * 1024);
    const tooBig = await fetch(`${t.gw.url}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${t.a.key}`, "content-type": "application/json" }, body: big });
    await expectError(tooBig, 503, "product_paused");
    const malformed = await fetch(`${t.gw.url}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${t.a.key}`, "content-type": "application/json" }, body: "{" });
    await expectError(malformed, 503, "product_paused");
  });

  it("keeps the public routes answering, with /status saying paused", async () => {
    expect((await fetch(`${t.gw.url}/v1/models`)).status).toBe(200);
    const status = (await (await fetch(`${t.gw.url}/status`)).json()) as { status: string };
    expect(status.status).toBe("paused");
  });
});

describe("gateway resume", () => {
  beforeAll(async () => {
    expect(await cli("resume")).toEqual({ paused: false });
  });

  it("serves key routes again", async () => {
    const res = await chat();
    expect(res.status).toBe(200);
    const body = (await res.json()) as { usage: { cost_usd: number } };
    expect(body.usage.cost_usd).toBeGreaterThan(0);
  });

  it("sets /status back to ok", async () => {
    const status = (await (await fetch(`${t.gw.url}/status`)).json()) as { status: string };
    expect(status.status).toBe("ok");
  });
});

describe("the operator's event log during a pause", () => {
  it("writes one product_paused line for all of a pause's refusals, none per refusal, and one product_resumed at its end", async () => {
    const lines: { event?: string; level?: string }[] = [];
    const restore = events.redirect((line) => lines.push(JSON.parse(line)));
    try {
      expect(await cli("pause")).toEqual({ paused: true });
      for (let i = 0; i < 5; i++) await expectError(await chat(), 503, "product_paused");
      expect(await cli("resume")).toEqual({ paused: false });
      expect((await chat()).status).toBe(200);
      expect((await chat()).status).toBe(200);
    } finally {
      restore();
    }
    expect(lines.map((l) => `${l.level} ${l.event}`)).toEqual(["warn product_paused", "info product_resumed"]);
  }, 60_000);
});
