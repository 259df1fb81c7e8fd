import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "bun:test";
import { events } from "../../src/core/events.ts";
import { gatewayJson } from "../support/cli.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { postWithApiKey, sqlGet } from "../support/keyed.ts";
import { errorOf } from "../support/errors.ts";

// Issue 13: a full disk or a read-only database answers 503 database_unavailable (retryable), charges
// nothing, writes one event line per failure (rate-limited, no stack floods), and the gateway
// recovers by itself once the condition clears. Simulated on the server's own connection.

let gw: TestGateway;
let lines: Record<string, unknown>[] = [];
let restore: () => void;
beforeAll(async () => {
  gw = await startTestGateway({ limits: { default_rpm: 10_000 } });
});
afterAll(() => gw.stop());
// Fresh rate windows per test, so that one test's flood does not silence the next.
beforeEach(() => {
  lines = [];
  restore = events.redirect((line) => lines.push(JSON.parse(line) as Record<string, unknown>));
});
afterEach(() => {
  restore();
  const db = gw.services.db.$client;
  db.exec("PRAGMA query_only = OFF");
  db.exec("PRAGMA max_page_count = 1073741823");
  db.exec("DROP TABLE IF EXISTS filler");
  db.exec("DROP TRIGGER IF EXISTS boom");
});

const chat = { model: "demo", max_tokens: 20, messages: [{ role: "user", content: "hi" }] };
const idOf = (res: Response) => res.headers.get("x-gateway-request-id")!;
const readOnly = () => gw.services.db.$client.exec("PRAGMA query_only = ON");

/** Fills the file up to its page limit: a write that needs a new page then fails with SQLITE_FULL. */
function fillDisk(): void {
  const db = gw.services.db.$client;
  db.exec("CREATE TABLE filler (b BLOB)");
  const pages = (db.query("PRAGMA page_count").get() as { page_count: number }).page_count;
  db.exec(`PRAGMA max_page_count = ${pages + 2}`);
  try {
    for (;;) db.run("INSERT INTO filler VALUES (zeroblob(2000))");
  } catch (e) {
    expect((e as { code?: string }).code).toBe("SQLITE_FULL");
  }
}

describe("a read-only database", () => {
  it("answers 503 database_unavailable with Retry-After, in the spec's error shape", async () => {
    const a = await gw.account(1);
    readOnly();
    const res = await postWithApiKey(gw, "/v1/chat/completions", chat, a.key);
    expect(res.status).toBe(503);
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    const err = await errorOf(res);
    expect(Object.keys(err).sort()).toEqual(["code", "message", "request_id", "type"]);
    expect(err).toMatchObject({ type: "database_unavailable", code: "database_unavailable", request_id: idOf(res) });
  });

  it("charges nothing and keeps no hold", async () => {
    const a = await gw.account(1);
    const before = gw.money(a.accountId);
    readOnly();
    const res = await postWithApiKey(gw, "/v1/chat/completions", chat, a.key);
    expect(res.status).toBe(503);
    gw.services.db.$client.exec("PRAGMA query_only = OFF");
    expect(gw.money(a.accountId)).toEqual({ ...before, reserved: 0, openHolds: 0 });
  });

  it("writes one event line with the request id and the SQLite code, not a stack", async () => {
    const a = await gw.account(1);
    readOnly();
    const res = await postWithApiKey(gw, "/v1/chat/completions", chat, a.key);
    const mine = lines.filter((l) => l.request_id === idOf(res));
    expect(mine.find((l) => l.event === "gateway_error")).toMatchObject({ status: 503, code: "database_unavailable", reason: expect.stringContaining("SQLITE_READONLY") });
    expect(mine.find((l) => l.event === "request_log_write_failed")).toBeDefined();
    expect(mine.some((l) => "stack" in l)).toBe(false);
  });

  it("keeps no hold of a stream that could not be settled", async () => {
    const a = await gw.account(1);
    readOnly();
    // How the stream ends for the client is the stream's business (it may be cut); the hold must go.
    await postWithApiKey(gw, "/v1/chat/completions", { ...chat, stream: true }, a.key)
      .then((res) => res.text())
      .catch(() => "");
    gw.services.db.$client.exec("PRAGMA query_only = OFF");
    const m = gw.money(a.accountId);
    expect(m).toMatchObject({ reserved: 0, openHolds: 0, balance: m.ledgerSum });
    expect(lines.find((l) => l.event === "ledger_write_failed")).toMatchObject({ reason: expect.stringContaining("SQLITE_READONLY") });
  });

  it("serves again once the database is writable, without a restart", async () => {
    const a = await gw.account(1);
    readOnly();
    expect((await postWithApiKey(gw, "/v1/chat/completions", chat, a.key)).status).toBe(503);
    gw.services.db.$client.exec("PRAGMA query_only = OFF");
    const res = await postWithApiKey(gw, "/v1/chat/completions", chat, a.key);
    expect(res.status).toBe(200);
    expect(sqlGet<{ status: number }>(gw, "SELECT status FROM request_logs WHERE request_id = ?", idOf(res)).status).toBe(200);
  });

  it("does not flood the log: repeats of one kind are rate-limited and counted", async () => {
    const a = await gw.account(10);
    readOnly();
    for (let i = 0; i < 60; i++) expect((await postWithApiKey(gw, "/v1/chat/completions", chat, a.key)).status).toBe(503);
    expect(lines.filter((l) => l.event === "gateway_error").length).toBeLessThanOrEqual(20);
    expect(lines.filter((l) => l.event === "request_log_write_failed").length).toBeLessThanOrEqual(20);
  });
});

describe("a full disk", () => {
  it("answers 503 database_unavailable, not 500, and charges nothing", async () => {
    const a = await gw.account(5);
    const before = gw.money(a.accountId);
    fillDisk();
    const statuses = new Set<number>();
    for (let i = 0; i < 40; i++) statuses.add((await postWithApiKey(gw, "/v1/chat/completions", chat, a.key)).status);
    expect(statuses.has(500)).toBe(false);
    expect(statuses.has(503)).toBe(true);
    const after = gw.money(a.accountId);
    expect(after.balance).toBe(after.ledgerSum);
    expect(after.openHolds).toBe(0);
    expect(after.balance).toBeLessThanOrEqual(before.balance);
    expect(lines.some((l) => l.event === "gateway_error" && l.code === "database_unavailable")).toBe(true);
    expect(lines.some((l) => String(l.reason).startsWith("SQLITE_FULL"))).toBe(true);
  });

  it("serves again once space is freed", async () => {
    const a = await gw.account(5);
    fillDisk();
    for (let i = 0; i < 40; i++) await postWithApiKey(gw, "/v1/chat/completions", chat, a.key);
    gw.services.db.$client.exec("DROP TABLE filler");
    expect((await postWithApiKey(gw, "/v1/chat/completions", chat, a.key)).status).toBe(200);
  });
});

describe("an unexpected error", () => {
  it("answers 500 under a request id that `gateway logs show` finds", async () => {
    gw.services.db.$client.exec("CREATE TRIGGER boom BEFORE INSERT ON ledger_entries WHEN NEW.kind = 'charge' BEGIN SELECT RAISE(ABORT, 'ledger exploded'); END");
    const res = await postWithApiKey(gw, "/v1/chat/completions", chat, (await gw.account(1)).key);
    expect(res.status).toBe(500);
    const row = await gatewayJson(["logs", "show", idOf(res), "--db", gw.config.database]);
    expect(row).toMatchObject({ request_id: idOf(res), status: 500, error_code: "internal_error" });
  });

  it("writes one line per request and its stack once, not once per request", async () => {
    gw.services.db.$client.exec("CREATE TRIGGER boom BEFORE INSERT ON ledger_entries WHEN NEW.kind = 'charge' BEGIN SELECT RAISE(ABORT, 'ledger exploded'); END");
    const a = await gw.account(5);
    for (let i = 0; i < 5; i++) expect((await postWithApiKey(gw, "/v1/chat/completions", chat, a.key)).status).toBe(500);
    const errs = lines.filter((l) => l.event === "gateway_error");
    expect(errs).toHaveLength(5);
    expect(errs.every((l) => l.code === "internal_error" && String(l.reason).includes("ledger exploded"))).toBe(true);
    expect(errs.filter((l) => "stack" in l).length).toBeLessThanOrEqual(1);
  });
});

describe("the access log and metrics of a request whose batch failed", () => {
  let logged: TestGateway;
  beforeAll(async () => {
    logged = await startTestGateway({ limits: { default_rpm: 10_000 }, server: { access_log: true } });
  });
  afterAll(() => logged.stop());
  afterEach(() => {
    const db = logged.services.db.$client;
    db.exec("DROP TRIGGER IF EXISTS unsettled");
    db.exec("DROP TRIGGER IF EXISTS full");
    db.exec("DROP TABLE IF EXISTS dangling");
  });

  /** The request's access log lines, the requests the metrics counted served (200), and its answer's status. */
  async function request(): Promise<{ status: number; lines: { status: number }[]; served: number }> {
    const a = await logged.account(1);
    const served = async () => [...(await logged.services.metrics.render()).matchAll(/^gateway_requests_total\{[^}]*status="200"\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
    const before = await served();
    let out = "";
    const write = process.stdout.write;
    // The lines go to stdout every half second: caught from the request to the flush, so that none is missed.
    process.stdout.write = ((chunk: string) => ((out += chunk), true)) as typeof process.stdout.write;
    let res: Response;
    try {
      res = await postWithApiKey(logged, "/v1/chat/completions", chat, a.key);
      await res.text();
      // The failure's row is written after the answer, through the next batch.
      await Bun.sleep(50);
      logged.services.accessLog!.flush();
    } finally {
      process.stdout.write = write;
    }
    const lines = out.split("\n").filter((l) => l.includes(idOf(res))).map((l) => JSON.parse(l) as { status: number });
    return { status: res.status, lines, served: (await served()) - before };
  }

  it("is one line with the failure, not 200, when the batch's COMMIT failed", async () => {
    const db = logged.services.db.$client;
    // A deferred foreign key, checked at the COMMIT, broken by the served request's row only.
    db.exec("CREATE TABLE dangling (id INTEGER PRIMARY KEY, ref INTEGER REFERENCES dangling(id) DEFERRABLE INITIALLY DEFERRED)");
    db.exec("CREATE TEMP TRIGGER unsettled AFTER INSERT ON request_logs WHEN NEW.status = 200 BEGIN INSERT INTO dangling (ref) VALUES (-1); END");
    const r = await request();
    expect(r.status).toBe(500);
    expect(r.lines.map((l) => l.status)).toEqual([500]);
    expect(r.served).toBe(0);
  });

  it("is one line with the 503, not 200, when SQLite rolled the batch back (a full disk)", async () => {
    logged.services.db.$client.exec("CREATE TEMP TRIGGER full BEFORE INSERT ON request_logs WHEN NEW.status = 200 BEGIN SELECT RAISE(ROLLBACK, 'disk full'); END");
    const r = await request();
    expect(r.status).toBe(503);
    expect(r.lines.map((l) => l.status)).toEqual([503]);
    expect(r.served).toBe(0);
  });

  it("is one line with 200 when the batch committed", async () => {
    const r = await request();
    expect(r.status).toBe(200);
    expect(r.lines.map((l) => l.status)).toEqual([200]);
    expect(r.served).toBe(1);
  });
});
