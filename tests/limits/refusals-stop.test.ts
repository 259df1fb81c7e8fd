import { expect, it } from "bun:test";
import { events } from "../../src/core/events.ts";
import { startTestGateway } from "../support/gateway.ts";

// Issue 14 item 11: refusals past the per-address budget are counted into one summary event a
// minute; those of the last minute before a stop are written at the stop, not lost.
it("writes the summary of the refusals counted since the last one when the server stops", async () => {
  const lines: Record<string, unknown>[] = [];
  const restore = events.redirect((line) => lines.push(JSON.parse(line) as Record<string, unknown>));
  try {
    const gw = await startTestGateway();
    const statuses: number[] = [];
    for (let i = 0; i < 70; i++) {
      const res = await fetch(`${gw.url}/v1/me`, { headers: { "x-api-key": "gk_sk_not-a-key" } });
      statuses.push(res.status);
      await res.text();
    }
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    expect(lines.filter((l) => l.event === "refusals_summarized")).toEqual([]);
    await gw.stop();
    expect(lines.filter((l) => l.event === "refusals_summarized")).toHaveLength(1);
  } finally {
    restore();
  }
});

it("forgets every address once their budgets are full again, so requests stop asking for theirs", async () => {
  const { RefusalGate } = await import("../../src/limits/refusals.ts");
  let t = 0;
  const gate = new RefusalGate({ now: () => t });
  expect(gate.untouched).toBe(true);
  gate.spend("203.0.113.1");
  expect(gate.untouched).toBe(false);
  t += 61_000;
  expect(gate.waitFor("203.0.113.2")).toBeNull();
  expect(gate.untouched).toBe(true);
});
