import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { rmSync } from "node:fs";
import { MIN_SAMPLES } from "../../src/ledger/calibration.ts";
import { startGateway } from "../../src/server.ts";
import { gatewayJson } from "../support/cli.ts";
import { errorOf } from "../support/errors.ts";
import { accountsOf, startGatewayOnMock, testConfig } from "../support/gateway.ts";
import { postJson } from "../support/http.ts";
import { estimateOf, messagesBody } from "../support/keyed.ts";
import { startMockUpstream, type MockUpstream } from "../support/mock-upstream.ts";
import { PRICES_NANO, textModel as model } from "../support/prices.ts";

// Issue 17, "The estimator, calibrated", over HTTP: settled requests feed their model's window with
// the upstream's own input counts; count_tokens and the holds read it; a restart keeps it; the CLI
// and /metrics show it.

const MODELS = ["native", "translated", "streamed", "no-usage", "held", "metered", "cjk-held", "taught"].map((id) => model(id, id === "translated" ? "openai" : "anthropic"));

let up: MockUpstream;
let gw: Awaited<ReturnType<typeof startGatewayOnMock>>["gw"];
let stop: () => Promise<void>;
let payer: { key: string; accountId: number };
beforeAll(async () => {
  ({ up, gw, stop } = await startGatewayOnMock({ openai: true, models: MODELS, limits: { default_rpm: 100_000, count_tokens_rpm: 100_000 } }));
  payer = await gw.account(100);
});
afterAll(() => stop());

const TEXT = "Summarise the quarterly figures for the board. ".repeat(80);
const bytesOf = (body: unknown) => new TextEncoder().encode(JSON.stringify(body)).length;

/** One Messages request of `id` whose upstream reports `tokens` input tokens (a function of the body's bytes). */
async function settle(id: string, tokens: (bytes: number) => number, opts: { stream?: boolean; key?: string } = {}): Promise<{ bytes: number; tokens: number }> {
  const body = { ...messagesBody(16, id, TEXT), ...(opts.stream ? { stream: true } : {}) };
  const bytes = bytesOf(body);
  up.script({ kind: "text", text: "Done.", usage: { input: tokens(bytes) } });
  const res = await postJson(gw, "/v1/messages", opts.key ?? payer.key, body);
  expect(res.status).toBe(200);
  await res.text();
  return { bytes, tokens: tokens(bytes) };
}

const countTokens = async (id: string) => {
  const res = await postJson(gw, "/v1/messages/count_tokens", payer.key, messagesBody(16, id, TEXT));
  expect(res.status).toBe(200);
  return (await res.json()) as { input_tokens: number; gateway: { exact: boolean; method: string; typical_error_pct: number | null } };
};

/** Half the requests at 5 bytes a token, half at 7. */
const alternating = (i: number) => (bytes: number) => Math.round(bytes / (i % 2 ? 7 : 5));

describe("count_tokens, calibrated on settled requests", () => {
  it(`answers today's byte_estimate with a null error until ${MIN_SAMPLES} requests have settled`, async () => {
    for (let i = 0; i < MIN_SAMPLES - 1; i++) await settle("native", alternating(i));
    expect(await countTokens("native")).toEqual({
      input_tokens: estimateOf(messagesBody(16, "native", TEXT)),
      gateway: { exact: false, method: "byte_estimate", typical_error_pct: null },
    });
  });

  it(`answers byte_estimate_calibrated, bytes over the median bytes per token, and a measured error from the ${MIN_SAMPLES}th`, async () => {
    await settle("native", alternating(MIN_SAMPLES - 1));
    const answer = await countTokens("native");
    expect(answer.gateway.exact).toBe(false);
    expect(answer.gateway.method).toBe("byte_estimate_calibrated");
    // Every real count is 1/6 or 1/7 away from the one at 6 bytes a token, the median.
    expect(answer.gateway.typical_error_pct).toBeGreaterThan(14);
    expect(answer.gateway.typical_error_pct).toBeLessThan(18);
    const bytes = bytesOf(messagesBody(16, "native", TEXT));
    expect(answer.input_tokens).toBeGreaterThanOrEqual(Math.floor(bytes / 6.1));
    expect(answer.input_tokens).toBeLessThanOrEqual(Math.ceil(bytes / 5.9));
  });

  it("counts a translated route by the upstream's own counts of the body it was sent (a Messages client on an OpenAI-kind route)", async () => {
    let tokens = 0;
    for (let i = 0; i < MIN_SAMPLES; i++) ({ tokens } = await settle("translated", (b) => Math.round(b / 6)));
    const sent = up.requests.at(-1)!;
    expect(sent.path).toBe("/v1/chat/completions");
    // The window learns the translation's bytes per token: the upstream counted those bytes, not the client's.
    const bytesPerToken = new TextEncoder().encode(sent.rawBody).length / tokens;
    const answer = await countTokens("translated");
    expect(answer.gateway.method).toBe("byte_estimate_calibrated");
    expect(answer.input_tokens).toBe(Math.ceil(bytesOf(messagesBody(16, "translated", TEXT)) / bytesPerToken));
    expect(answer.gateway.typical_error_pct).toBe(0);
  });

  it("counts streamed answers by their message_start and message_delta counts", async () => {
    for (let i = 0; i < MIN_SAMPLES; i++) await settle("streamed", (b) => Math.round(b / 10), { stream: true });
    expect((await countTokens("streamed")).gateway.method).toBe("byte_estimate_calibrated");
  });

  it("never counts an answer billed on our estimate because its usage was no usage", async () => {
    const invalid = () => "12" as unknown as number;
    for (let i = 0; i < MIN_SAMPLES; i++) await settle("no-usage", invalid, { stream: i % 2 === 1 });
    expect(await countTokens("no-usage")).toMatchObject({ gateway: { method: "byte_estimate", typical_error_pct: null } });
    expect(gw.services.calibration.views().find((v) => v.model === "no-usage")).toBeUndefined();
  });
});

describe("holds sized on the calibration", () => {
  const body = messagesBody(16, "held", TEXT);
  const bytes = bytesOf(body);
  const holdNano = (inputTokens: number) => Math.ceil((inputTokens * PRICES_NANO.input + 16 * PRICES_NANO.output) / 1e6);

  it("serves a request the plain estimate refused with 402 near a small balance, once the model's real tokens are shown to be fewer", async () => {
    const plain = holdNano(Math.ceil(bytes / 4));
    const calibrated = holdNano(Math.ceil(bytes / 6));
    // Between the two holds: too little for the plain estimate, enough for the calibrated one.
    const poor = await gw.account((calibrated + (plain - calibrated) / 2) / 1e9);
    const refused = await postJson(gw, "/v1/messages", poor.key, body);
    expect(refused.status).toBe(402);
    expect((await errorOf(refused)).code).toBe("insufficient_balance");

    const sent: { bytes: number; tokens: number }[] = [];
    for (let i = 0; i < MIN_SAMPLES; i++) sent.push(await settle("held", (b) => Math.round(b / (6 + (i % 3) * 0.5))));
    await settle("held", (b) => Math.round(b / 6), { key: poor.key });
    // The charge came from the upstream's usage, well inside what was held.
    expect(gw.money(poor.accountId)).toMatchObject({ reserved: 0, openHolds: 0 });
    // No request of the window would have been held short of its real input.
    for (const s of sent) expect(gw.services.calibration.holdTokens("held", s.bytes)).toBeGreaterThanOrEqual(s.tokens);
  });
});

describe("the plain estimate of a model not yet calibrated", () => {
  it("holds a CJK prompt at a token a character, not a token per 4 bytes", async () => {
    const prompt = "请总结本季度的财务数据并说明主要变化。".repeat(40); // 760 characters, 2,280 bytes
    const body = { ...messagesBody(16, "cjk-held", prompt), stream: true };
    const bytes = bytesOf(body);
    const asciiBytes = bytes - 3 * prompt.length;
    // The JSON around the prompt at 4 bytes a token, each CJK character a token.
    const expected = Math.ceil(asciiBytes / 4) + prompt.length;
    // Bytes / 4 counted the 3-byte characters three quarters of a token each.
    expect(expected).toBeGreaterThan(Math.ceil(bytes / 4) * 1.25);
    const a = await gw.account(10);
    up.script({ kind: "text", text: "好的。", chunks: 2, delayMs: 100 });
    const res = await postJson(gw, "/v1/messages", a.key, body);
    const reader = res.body!.getReader();
    await reader.read();
    // The stream is under way: its hold is what the account has reserved.
    expect(gw.money(a.accountId).reserved).toBe(Math.ceil((expected * PRICES_NANO.input + 16 * PRICES_NANO.output) / 1e6));
    while (!(await reader.read()).done);
  });
});

describe("a cancelled stream of a calibrated model", () => {
  const TAUGHT = "The quarterly figures rose again. ".repeat(12); // 408 bytes
  const bytes = TAUGHT.length;

  it("is charged its delivered bytes over the lowest output bytes per token its completed streams showed", async () => {
    // Completed streams whose upstream counted 3 and 3.5 bytes a token: denser than the plain 4.
    for (let i = 0; i < MIN_SAMPLES; i++) {
      up.script({ kind: "text", text: TAUGHT, usage: { output: Math.round(bytes / (i % 2 ? 3.5 : 3)) } });
      const res = await postJson(gw, "/v1/messages", payer.key, { ...messagesBody(200, "taught", "hi"), stream: true });
      expect(res.status).toBe(200);
      await res.text();
    }
    expect(gw.services.calibration.views().find((v) => v.model === "taught")!.output).toMatchObject({ samples: MIN_SAMPLES, calibrated: true, cancelBytesPerToken: 3 });

    up.script({ kind: "text", text: TAUGHT, chunks: 4, delayMs: 150 });
    const res = await postJson(gw, "/v1/messages", payer.key, { ...messagesBody(200, "taught", "hi"), stream: true });
    const requestId = res.headers.get("x-gateway-request-id")!;
    const reader = res.body!.getReader();
    let seen = "";
    while (!seen.includes("content_block_stop")) seen += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    for (let i = 0; i < 50 && gw.money(payer.accountId).openHolds > 0; i++) await Bun.sleep(20);
    const log = gw.services.db.$client.query("SELECT error_code, output_tokens FROM request_logs WHERE request_id = ?").get(requestId) as { error_code: string; output_tokens: number };
    // 408 bytes at 3 bytes a token (the plain rule said 102).
    expect(log).toEqual({ error_code: "client_cancelled", output_tokens: 136 });
  });
});

describe("the operator's read-outs", () => {
  it("/metrics shows samples, median bytes per token, hold bytes per token and the typical error per model", async () => {
    for (let i = 0; i < MIN_SAMPLES; i++) await settle("metered", (b) => Math.round(b / 5));
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    expect(text).toContain(`gateway_estimator_samples{model="metered"} ${MIN_SAMPLES}`);
    expect(text).toContain('gateway_estimator_bytes_per_token{model="metered"} 5');
    expect(text).toContain('gateway_estimator_hold_bytes_per_token{model="metered"} 5');
    expect(text).toContain('gateway_estimator_typical_error_pct{model="metered"} 0');
    expect(text).toMatch(/gateway_estimator_plain_error_pct\{model="metered"\} 2\d(\.\d)?\n/);
  });
});

describe("a restart", () => {
  it("keeps every model's window (settings rows written at stop), and gateway usage --calibration reads them", async () => {
    const { config, dir } = testConfig({
      providers: [{ id: "anthropic", kind: "anthropic", base_url: up.url, api_key: "sk-ant-upstream" }],
      models: [model("kept", "anthropic")],
      limits: { default_rpm: 100_000 },
    });
    try {
      const first = startGateway(config, { port: 0, quiet: true });
      const a = await accountsOf(first.services).account(10);
      const body = messagesBody(16, "kept", TEXT);
      for (let i = 0; i < MIN_SAMPLES; i++) {
        up.script({ kind: "text", text: "Done.", usage: { input: Math.round(bytesOf(body) / 5) } });
        expect((await postJson(first, "/v1/messages", a.key, body)).status).toBe(200);
      }
      const before = first.services.calibration.views();
      await first.stop();

      const again = startGateway(config, { port: 0, quiet: true });
      expect(again.services.calibration.views()).toEqual(before);
      const res = await postJson(again, "/v1/messages/count_tokens", a.key, body);
      expect(((await res.json()) as { gateway: { method: string } }).gateway.method).toBe("byte_estimate_calibrated");
      await again.stop();

      const report = await gatewayJson<Record<string, unknown>[]>(["usage", "--calibration", "--db", config.database]);
      // 5 bytes a token: the plain estimate counts a quarter more than the real tokens.
      expect(report).toEqual([
        {
          model: "kept", samples: MIN_SAMPLES, calibrated: true, median_bytes_per_token: 5, hold_bytes_per_token: 5, typical_error_pct: 0, plain_error_pct: before[0]!.plainErrorPct,
          // JSON answers teach no output window: only completed streams do.
          output_samples: 0, output_median_bytes_per_token: null, cancel_bytes_per_token: 4, output_plain_error_pct: null,
        },
      ]);
      expect(before[0]!.plainErrorPct).toBeCloseTo(25, 0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
