import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { requestIdPrefixAt } from "../../src/core/request-id.ts";
import { expectOneLineFailure, gateway, gatewayJson } from "../support/cli.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { hi, postJson } from "../support/http.ts";
import { sqlAll } from "../support/keyed.ts";

// logs show / list, usage and prune: support look-ups and reports over the request log.

let gw: TestGateway;
let db: string;
const alice = `alice${process.pid}@reports.test`;
// An email a CSV must quote: a comma and a quote are legal in its local part.
const bob = `"bob,the"${process.pid}@reports.test`;
let aliceKey: { id: number; key: string; prefix: string };
let bobKey: { id: number; key: string; prefix: string };
const ids: { ok: string[]; notFound: string } = { ok: [], notFound: "" };

const run = <T = Record<string, any>>(...args: string[]) => gatewayJson<T>([...args, "--db", db]);
const chat = (key: string, model = "demo") => postJson(gw, "/v1/chat/completions", key, { model, max_tokens: 16, messages: hi });

beforeAll(async () => {
  gw = await startTestGateway();
  db = gw.config.database;
  await run("account", "create", "--email", alice, "--balance", "5");
  await run("account", "create", "--email", bob, "--balance", "5");
  aliceKey = await run("key", "create", "--email", alice);
  bobKey = await run("key", "create", "--email", bob);
  for (const key of [aliceKey.key, aliceKey.key, bobKey.key]) {
    const res = await chat(key);
    expect(res.status).toBe(200);
    ids.ok.push(res.headers.get("x-gateway-request-id")!);
  }
  ids.notFound = (await chat(aliceKey.key, "no-such-model")).headers.get("x-gateway-request-id")!;
}, 60_000);
afterAll(() => gw.stop());

describe("logs show", () => {
  it("names the account's email and the key's prefix, never the key", async () => {
    const row = await run("logs", "show", ids.ok[0]!);
    expect(row).toMatchObject({ request_id: ids.ok[0], account_email: alice, key_prefix: aliceKey.prefix, status: 200 });
    expect(typeof row.cost_usd).toBe("number");
    expect(JSON.stringify(row)).not.toContain(aliceKey.key);
  });

  it("names each field as its request_logs column, cache_write_1h_tokens included", async () => {
    const row = await run("logs", "show", ids.ok[0]!);
    const columns = sqlAll<{ name: string }>(gw, "SELECT name FROM pragma_table_info('request_logs')").map((c) => c.name);
    // Every column but the stored nano-dollars (shown as cost_usd) is in the document under its own name.
    for (const column of columns.filter((c) => c !== "cost_nano")) expect(Object.keys(row)).toContain(column);
  });
});

describe("logs list", () => {
  it("lists the newest requests first, with email and key prefix", async () => {
    const rows = await run<Record<string, any>[]>("logs", "list", "--limit", "2");
    expect(rows).toHaveLength(2);
    expect(rows[0]!.request_id > rows[1]!.request_id).toBe(true);
  });

  it("filters by account", async () => {
    const rows = await run<Record<string, any>[]>("logs", "list", "--account", bob);
    expect(rows.map((r) => r.request_id)).toEqual([ids.ok[2]]);
    expect(rows[0]).toMatchObject({ account: bob, key_prefix: bobKey.prefix, model: "demo-text-1", status: 200 });
  });

  it("filters by key id or prefix", async () => {
    const byId = await run<Record<string, any>[]>("logs", "list", "--key", String(aliceKey.id));
    const byPrefix = await run<Record<string, any>[]>("logs", "list", "--key", aliceKey.prefix);
    expect(byId.map((r) => r.request_id).sort()).toEqual([ids.ok[0], ids.ok[1], ids.notFound].sort());
    expect(byPrefix).toEqual(byId);
  });

  it("filters by status and by status class", async () => {
    const notFound = await run<Record<string, any>[]>("logs", "list", "--account", alice, "--status", "404");
    expect(notFound.map((r) => r.request_id)).toEqual([ids.notFound]);
    expect(notFound[0]).toMatchObject({ error_code: "model_not_found" });
    expect((await run<unknown[]>("logs", "list", "--account", alice, "--status", "4xx"))).toHaveLength(1);
    expect((await run<unknown[]>("logs", "list", "--account", alice, "--status", "2xx"))).toHaveLength(2);
  });

  it("filters by model, an alias finding the canonical id", async () => {
    const rows = await run<Record<string, any>[]>("logs", "list", "--account", alice, "--model", "demo");
    expect(rows).toHaveLength(2);
  });

  it("filters by --since, as a duration or an ISO time", async () => {
    expect(await run<unknown[]>("logs", "list", "--account", alice, "--since", "1h")).toHaveLength(3);
    expect(await run<unknown[]>("logs", "list", "--account", alice, "--since", new Date(Date.now() + 60_000).toISOString())).toHaveLength(0);
  });

  it("--csv quotes fields with commas and quotes (RFC 4180), money as exact decimals", async () => {
    const r = await gateway(["logs", "list", "--account", bob, "--csv", "--db", db]);
    expect(r.code).toBe(0);
    const [header, line, end] = r.stdout.split("\r\n");
    expect(header).toStartWith("request_id,created_at,account,key_prefix,");
    expect(line).toContain(`,"""bob,the""${process.pid}@reports.test",${bobKey.prefix},`);
    expect(end).toBe("");
    expect(r.stderr).toBe(`gateway: database ${db}\n`);
  });

  it("refuses a bad --status, --since or --limit in one line", async () => {
    for (const [flag, value] of [["--status", "abc"], ["--since", "yesterday"], ["--limit", "0"], ["--account", "nobody@reports.test"]]) {
      expect(expectOneLineFailure(await gateway(["logs", "list", flag!, value!, "--db", db]))).toContain(flag === "--account" ? "no account" : flag!);
    }
  });
});

describe("usage", () => {
  it("sums spend per day, account, key and model", async () => {
    const rows = await run<Record<string, any>[]>("usage", "--account", alice);
    const today = new Date().toISOString().slice(0, 10);
    const served = rows.find((r) => r.model === "demo-text-1")!;
    expect(served).toMatchObject({ day: today, account_email: alice, key_id: aliceKey.id, key_prefix: aliceKey.prefix, requests: 2 });
    const logged = gw.services.db.$client
      .query("SELECT SUM(cost_nano) AS n FROM request_logs WHERE key_id = ? AND status = 200")
      .get(aliceKey.id) as { n: number };
    expect(served.cost_usd).toBe(logged.n / 1e9);
    expect(served.cost_usd).toBeGreaterThan(0);
  });

  it("counts model requests only: a /v1/me call is none, and a refusal is counted as refused, not as a request", async () => {
    // A balance check of bob's: a logged /v1 request, but no model request.
    expect((await fetch(`${gw.url}/v1/me`, { headers: { "x-api-key": bobKey.key } })).status).toBe(200);
    expect((await run<Record<string, any>[]>("usage", "--account", bob)).map((r) => r.model)).toEqual(["demo-text-1"]);
    const rows = await run<Record<string, any>[]>("usage", "--account", alice);
    expect(rows.map((r) => r.model).sort()).toEqual(["demo-text-1", "no-such-model"]);
    expect(rows.find((r) => r.model === "demo-text-1")).toMatchObject({ requests: 2, refused: 0 });
    expect(rows.find((r) => r.model === "no-such-model")).toMatchObject({ requests: 0, refused: 1, cost_usd: 0 });
  }, 60_000);

  it("--since in the future finds nothing", async () => {
    expect(await run<unknown[]>("usage", "--since", new Date(Date.now() + 60_000).toISOString())).toEqual([]);
  });

  it("--csv has a header and one quoted row per group", async () => {
    const r = await gateway(["usage", "--account", bob, "--csv", "--db", db]);
    const lines = r.stdout.split("\r\n");
    expect(lines[0]).toBe("day,account,key_id,key_prefix,model,requests,refused,input_tokens,output_tokens,cost_usd");
    expect(lines[1]).toContain(`"""bob,the""${process.pid}@reports.test"`);
    expect(lines).toHaveLength(3);
  });
});

describe("logs prune", () => {
  it("keeps rows for [logs] retention_days from the config", async () => {
    const made = (await fetch(`${gw.url}/v1/models`)).headers.get("x-gateway-request-id")!;
    const threeDaysAgo = Date.now() - 3 * 24 * 3600 * 1000;
    const old = `${requestIdPrefixAt(threeDaysAgo)}${made.slice(requestIdPrefixAt(0).length)}`;
    gw.services.db.$client.prepare("UPDATE request_logs SET created_at = ?, request_id = ? WHERE request_id = ?").run(threeDaysAgo, old, made);
    const config = join(gw.dir, "retention.toml");
    writeFileSync(config, "[logs]\nretention_days = 7\n");
    expect(await run("logs", "prune", "--config", config)).toMatchObject({ removed: 0, retention_days: 7 });
    writeFileSync(config, "[logs]\nretention_days = 2\n");
    expect(await run("logs", "prune", "--config", config)).toMatchObject({ removed: 1, retention_days: 2 });
    expect((await gateway(["logs", "show", old, "--db", db])).code).not.toBe(0);
  });
});
