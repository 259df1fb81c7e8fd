import { gcAndSweep } from "bun:jsc";
import { describe, expect, it } from "bun:test";
import type { HeapControl } from "../../src/server.ts";
import { startGatewayOnMock, type TestGateway } from "../support/gateway.ts";
import { messagesBody, postWithApiKey } from "../support/keyed.ts";
import { expectedNano, textModel } from "../support/prices.ts";

// The idle collector wired into a real server (src/server.ts, `listen`): its checks scheduled by
// collectWhenIdle, the shrink step reaching the serving connection's page cache, a request in flight
// ending the steps. The steps' logic on a fake heap alone: idle-collector.test.ts.

const MiB = 1024 * 1024;
/** The idle checks' period here, instead of the product's 10 s. */
const CHECK_MS = 50;
const USAGE = { input: 1000, output: 200 };
const COST = expectedNano(USAGE);

/**
 * The engine's heap as the collector sees it, with a size the test sets (a burst without allocating
 * one): each step does the engine's real work and is written down in order.
 */
function tracedHeap() {
  const trace = { size: 50 * MiB, steps: [] as string[], onCollect: () => {} };
  const heap: HeapControl = {
    size: () => trace.size,
    collect: () => {
      trace.steps.push("collect");
      Bun.gc(true);
      trace.onCollect();
    },
    settle: () => {
      trace.steps.push("settle");
      gcAndSweep();
    },
    shrink: () => {
      trace.steps.push("shrink");
      Bun.shrink();
    },
  };
  return { trace, heap };
}

/** A gateway serving as `gateway serve` does (collectWhenIdle), its page cache drops written into the trace. */
async function idleGateway() {
  const { trace, heap } = tracedHeap();
  const rig = await startGatewayOnMock({
    models: [textModel("claude-i", "anthropic")],
    limits: { default_rpm: 10_000 },
    listen: { collectWhenIdle: true, idleChecks: { everyMs: CHECK_MS, heap } },
  });
  const client = rig.gw.services.db.$client;
  const exec = client.exec.bind(client);
  client.exec = ((sql: string, ...rest: never[]) => {
    if (sql === "PRAGMA shrink_memory") trace.steps.push("drop page cache");
    return exec(sql, ...rest);
  }) as typeof client.exec;
  return { ...rig, trace };
}

async function until(done: () => boolean, ms = 10_000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!done() && performance.now() < deadline) await Bun.sleep(10);
}

const ask = (gw: TestGateway, key: string) => postWithApiKey(gw, "/v1/messages", messagesBody(1000, "claude-i"), key);

describe("the idle collector of a started gateway", () => {
  it("runs its steps after a burst, drops the serving connection's page cache, then answers and charges as before", async () => {
    const { up, gw, trace, stop } = await idleGateway();
    try {
      up.setDefault({ kind: "text", text: "ok", usage: USAGE });
      const a = await gw.account(10);
      expect((await ask(gw, a.key)).status).toBe(200);
      trace.size += 20 * MiB;
      await until(() => trace.steps.includes("shrink"));
      expect(trace.steps).toEqual(["collect", "settle", "settle", "drop page cache", "shrink"]);

      const res = await ask(gw, a.key);
      expect(res.status).toBe(200);
      expect(((await res.json()) as { content: { text: string }[] }).content[0]!.text).toBe("ok");
      await until(() => gw.money(a.accountId).openHolds === 0);
      expect(gw.money(a.accountId)).toEqual({ balance: 10e9 - 2 * COST, reserved: 0, ledgerSum: 10e9 - 2 * COST, openHolds: 0 });
    } finally {
      await stop();
    }
  });

  it("ends the steps after a burst's collection when a request is in flight at a check: no page cache dropped", async () => {
    const { up, gw, trace, stop } = await idleGateway();
    try {
      const a = await gw.account(10);
      // Lasts 20 checks; sent as the collection runs, so that it is in flight at the checks after it.
      up.setDefault({ kind: "slow_stream", events: 10, intervalMs: 100 });
      let inFlight: Promise<Response> | null = null;
      trace.onCollect = () => {
        inFlight ??= ask(gw, a.key);
      };
      trace.size += 20 * MiB;
      await until(() => inFlight !== null);
      expect((await inFlight!).status).toBe(200);
      // Long enough for the steps left, had the sequence gone on.
      await Bun.sleep(6 * CHECK_MS);
      expect(trace.steps[0]).toBe("collect");
      expect(trace.steps).not.toContain("shrink");
      expect(trace.steps).not.toContain("drop page cache");
    } finally {
      await stop();
    }
  });
});
