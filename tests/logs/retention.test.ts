import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { requestIdPrefixAt } from "../../src/core/request-id.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";

// [logs] retention_days (default 90): how long the server keeps request log rows.

const DAY = 24 * 3600 * 1000;

/** Writes a log row as if made `daysAgo` days ago (request ids begin with their time). */
function rowAged(gw: TestGateway, daysAgo: number): string {
  const at = Date.now() - daysAgo * DAY;
  const id = `${requestIdPrefixAt(at)}aged0${String(daysAgo).padStart(6, "0")}`;
  gw.services.logs.write({ requestId: id, method: "GET", path: "/v1/models", status: 200, latencyMs: 1 });
  gw.services.db.$client.prepare("UPDATE request_logs SET created_at = ? WHERE request_id = ?").run(at, id);
  return id;
}

describe("the server's log retention", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ logs: { retention_days: 5 } });
  });
  afterAll(() => gw.stop());

  it("prunes what is older than [logs] retention_days and keeps the rest", async () => {
    const old = rowAged(gw, 6);
    const young = rowAged(gw, 4);
    expect(gw.services.logs.retentionDays).toBe(5);
    expect(gw.services.logs.prune()).toBe(1);
    expect(await gw.services.reports.find(old)).toBeNull();
    expect(await gw.services.reports.find(young)).not.toBeNull();
  });
});

describe("without [logs] retention_days", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(() => gw.stop());

  it("keeps rows 90 days", async () => {
    const old = rowAged(gw, 91);
    const young = rowAged(gw, 89);
    expect(gw.services.logs.prune()).toBe(1);
    expect(await gw.services.reports.find(old)).toBeNull();
    expect(await gw.services.reports.find(young)).not.toBeNull();
  });
});
