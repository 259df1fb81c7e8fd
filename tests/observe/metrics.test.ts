import { describe, expect, it } from "bun:test";
import { nanoToUsd } from "../../src/core/money.ts";
import { Metrics } from "../../src/observe/metrics.ts";
import type { LogRow } from "../../src/store/request-log/contract.ts";

const metrics = () => new Metrics({ holds: () => ({ count: 0, nano: 0 }), endpoint: (p) => p, routes: () => [], calibration: () => [] });
const row = (o: Partial<LogRow>): LogRow => ({ requestId: "r", method: "POST", path: "/v1/chat/completions", status: 200, latencyMs: 1, ...o });

describe("metrics from the request log rows", () => {
  it("sums each series' cost one request at a time, to the same float a per-request counter reached", async () => {
    const m = metrics();
    const costs = [1_234_567, 7, 99_999_999, 3_333_333, 1];
    let expected = 0;
    for (const c of costs) {
      m.row(row({ model: "m", costNano: c }));
      expected += nanoToUsd(c);
    }
    expect(await m.render()).toContain(`gateway_cost_usd_total{model="m"} ${expected}`);
  });

  it("lists only the token kinds that were counted, and counts on between scrapes", async () => {
    const m = metrics();
    m.row(row({ model: "m", inputTokens: 3, outputTokens: 0 }));
    expect(await m.render()).toContain('gateway_tokens_total{model="m",kind="input"} 3');
    m.row(row({ model: "m", inputTokens: 4, status: 429 }));
    const text = await m.render();
    expect(text).toContain('gateway_tokens_total{model="m",kind="input"} 7');
    expect(text).not.toContain('kind="output"');
    expect(text).toContain('gateway_requests_total{path="/v1/chat/completions",model="m",status="200"} 1');
    expect(text).toContain('gateway_requests_total{path="/v1/chat/completions",model="m",status="429"} 1');
  });
});
