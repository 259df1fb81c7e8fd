import { expect, it } from "bun:test";
import { events } from "../../src/logs/events.ts";
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
