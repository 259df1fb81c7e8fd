// One gateway serving from PostgreSQL, in process: the request path of SQLite, on the other engine.
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { SQL } from "bun";
import { startGatewayOnPostgres, type RunningGateway } from "../../src/server.ts";
import { postgresConfig } from "../support/cluster.ts";
import { startMockUpstream, type MockUpstream } from "../support/mock-upstream.ts";
import { startPostgres, type TestPostgres } from "../support/postgres.ts";

setDefaultTimeout(60_000);

let pg: TestPostgres;
let up: MockUpstream;
let gw: RunningGateway;
let db: SQL;
let key: string;
let accountId: number;

beforeAll(async () => {
  [pg, up] = await Promise.all([startPostgres(), startMockUpstream()]);
  const url = await pg.createDatabase("one_instance");
  const config = postgresConfig(url, {
    providers: [{ id: "anthropic", kind: "anthropic", base_url: up.url, api_key: "sk-up" }],
    models: [{ id: "claude-x", modalities: ["text"], endpoints: ["messages", "chat.completions"], pricing: { input: 3, output: 15 }, routes: [{ provider: "anthropic", model: "claude-x-1" }] }],
  });
  gw = await startGatewayOnPostgres(config, { port: 0, quiet: true });
  db = new SQL(url);
  const acc = await gw.services.accounts.create("one@test.local", { balanceNano: 5_000_000_000 });
  accountId = acc.id;
  key = (await gw.services.keys.create(acc.id, {})).key;
});

afterAll(async () => {
  await gw?.stop();
  await db?.close();
  await Promise.all([up?.stop(), pg?.stop()]);
});

const ask = (body: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  fetch(`${gw.url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json", "anthropic-version": "2023-06-01", ...headers },
    body: JSON.stringify({ model: "claude-x", max_tokens: 50, messages: [{ role: "user", content: "hi" }], ...body }),
  });

async function books() {
  const [r] = await db`SELECT a.balance_nano, a.held_nano, (SELECT coalesce(sum(amount_nano), 0) FROM ledger_entries e WHERE e.account_id = a.id) AS ledger_sum,
      (SELECT count(*)::int FROM holds h WHERE h.account_id = a.id) AS holds FROM accounts a WHERE a.id = ${accountId}`;
  return { balance: Number(r.balance_nano), held: Number(r.held_nano), ledgerSum: Number(r.ledger_sum), holds: r.holds as number };
}

describe("a gateway serving from PostgreSQL", () => {
  it("answers a paid request, charges its usage.cost_usd and writes its log row", async () => {
    const before = await books();
    const res = await ask();
    expect(res.status).toBe(200);
    const body = (await res.json()) as { usage: { cost_usd: number } };
    const after = await books();
    expect(before.balance - after.balance).toBe(Math.round(body.usage.cost_usd * 1e9));
    expect(after.balance).toBe(after.ledgerSum);
    expect(after.holds).toBe(0);
    const requestId = res.headers.get("x-gateway-request-id");
    const [row] = await db`SELECT status, cost_nano FROM request_logs WHERE request_id = ${requestId}`;
    expect(row.status).toBe(200);
  });

  it("streams, and charges the stream once it ends", async () => {
    const res = await ask({ stream: true });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain("message_stop");
    await Bun.sleep(100);
    const b = await books();
    expect(b.balance).toBe(b.ledgerSum);
    expect(b.holds).toBe(0);
  });

  it("serves a Chat client from the Messages route (translated), charged once", async () => {
    const before = await books();
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "claude-x", max_tokens: 30, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { usage: { cost_usd: number } };
    const after = await books();
    expect(before.balance - after.balance).toBe(Math.round(body.usage.cost_usd * 1e9));
    expect(after.balance).toBe(after.ledgerSum);
  });

  it("answers count_tokens free, and writes its row", async () => {
    const before = await books();
    const res = await fetch(`${gw.url}/v1/messages/count_tokens`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "claude-x", messages: [{ role: "user", content: "hello there" }] }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { input_tokens: number }).input_tokens).toBeGreaterThan(0);
    expect(await books()).toEqual(before);
    await Bun.sleep(50);
    const [row] = await db`SELECT status, cost_nano FROM request_logs WHERE request_id = ${res.headers.get("x-gateway-request-id")}`;
    expect([row.status, Number(row.cost_nano)]).toEqual([200, 0]);
  });

  it("refuses an unknown key with 401 and writes its row", async () => {
    const res = await fetch(`${gw.url}/v1/messages`, { method: "POST", headers: { "x-api-key": "gk_sk_nope", "content-type": "application/json" }, body: "{}" });
    expect(res.status).toBe(401);
  });

  it("replays an idempotent retry", async () => {
    const a = await ask({}, { "idempotency-key": "one-1" });
    const b = await ask({}, { "idempotency-key": "one-1" });
    expect(b.headers.get("idempotent-replayed")).toBe("true");
    expect(await b.text()).toBe(await a.text());
  });

  it("answers /v1/me with the balance and what is held", async () => {
    const res = await fetch(`${gw.url}/v1/me`, { headers: { "x-api-key": key } });
    expect(res.status).toBe(200);
    const me = (await res.json()) as { balance: { reserved_usd: number } };
    expect(me.balance.reserved_usd).toBe(0);
  });

  it("refuses with 402 what the balance cannot hold, and charges nothing", async () => {
    const before = await books();
    const res = await ask({ max_tokens: 100_000_000 });
    expect(res.status).toBe(402);
    expect(await books()).toEqual(before);
  });
});

describe("the charge and its log row, one statement", () => {
  it("a log row the database refuses leaves the request uncharged, with no hold left", async () => {
    await db.unsafe("CREATE FUNCTION refuse_log() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'log refused for the test'; END $$");
    await db.unsafe("CREATE TRIGGER refuse_log BEFORE INSERT ON request_logs FOR EACH ROW EXECUTE FUNCTION refuse_log()");
    try {
      const before = await books();
      const res = await ask();
      expect(res.status).toBe(500);
      await Bun.sleep(100);
      expect(await books()).toEqual(before);
    } finally {
      await db.unsafe("DROP TRIGGER refuse_log ON request_logs");
    }
    expect((await ask()).status).toBe(200);
  });
});

describe("a gateway whose PostgreSQL goes away", () => {
  it("answers 503 database_unavailable, and GET /readyz says not ready", async () => {
    await pg.stop();
    const res = await ask();
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("database_unavailable");
    const ready = await fetch(`${gw.url}/readyz`);
    expect(ready.status).toBe(503);
  });
});
