import { requestIdPrefixAt } from "../../src/core/request-id.ts";
import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { expectOneLineFailure, gateway, gatewayJson, tempInstallation } from "../support/cli.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { hi, postJson } from "../support/http.ts";
import { expectError } from "../support/errors.ts";

// DESIGN, Commands: the operator's CLI, run as child processes with --db and --json against the
// database of a running server, whose answers show that each command took effect.

let gw: TestGateway;
let db: string;
beforeAll(async () => {
  gw = await startTestGateway();
  db = gw.config.database;
});
afterAll(() => gw.stop());

let seq = 0;
const email = () => `op${process.pid}-${++seq}@cli.test`;
const run = <T = Record<string, unknown>>(...args: string[]) => gatewayJson<T>([...args, "--db", db]);
const me = async (key: string) => (await fetch(`${gw.url}/v1/me`, { headers: { authorization: `Bearer ${key}` } })).json() as Promise<Record<string, any>>;

interface CreatedKey {
  id: number;
  key: string;
  prefix: string;
}

describe("gateway account", () => {
  it("create opens an account with the starting 1 USD", async () => {
    const e = email();
    expect(await run("account", "create", "--email", e)).toMatchObject({ email: e, balance_usd: 1 });
  });

  it("create --balance sets the opening balance", async () => {
    expect(await run("account", "create", "--email", email(), "--balance", "2.5")).toMatchObject({ balance_usd: 2.5 });
  });

  it("credit tops up through the ledger and reports the new balance", async () => {
    const e = email();
    const acc = await run<{ id: number }>("account", "create", "--email", e, "--balance", "2");
    const out = await run("account", "credit", "--email", e, "--usd", "1.25", "--note", "invoice 7");
    expect(out).toMatchObject({ credited_usd: 1.25, balance_usd: 3.25 });
    const money = gw.money(acc.id);
    expect(money.balance).toBe(3.25e9);
    expect(money.ledgerSum).toBe(money.balance);
  });

  it("credit lets the server sharing the database serve a request it refused for lack of balance", async () => {
    const e = email();
    await run("account", "create", "--email", e, "--balance", "0.000001");
    const k = await run<CreatedKey>("key", "create", "--email", e);
    const ask = () => postJson(gw, "/v1/chat/completions", k.key, { model: "demo", max_tokens: 64, messages: hi });
    await expectError(await ask(), 402, "insufficient_balance");
    await run("account", "credit", "--email", e, "--usd", "1");
    expect((await ask()).status).toBe(200);
  });

  it("create refuses an email that already has an account", async () => {
    const e = email();
    await run("account", "create", "--email", e);
    expect(expectOneLineFailure(await gateway(["account", "create", "--email", e, "--db", db]))).toContain("already exists");
  });

  it("credit refuses an amount of zero", async () => {
    const e = email();
    await run("account", "create", "--email", e);
    expect(expectOneLineFailure(await gateway(["account", "credit", "--email", e, "--usd", "0", "--db", db]))).toContain("--usd");
  });
});

describe("gateway key", () => {
  let owner: string;
  beforeAll(async () => {
    owner = email();
    await run("account", "create", "--email", owner);
  });

  it("create prints a gk_sk_ key once in its JSON, and the key works", async () => {
    const k = await run<CreatedKey>("key", "create", "--email", owner, "--name", "ci");
    expect(k.key).toMatch(/^gk_sk_[A-Za-z0-9]{32,}$/);
    expect(k.key).toStartWith(k.prefix);
    expect((await me(k.key)).balance.balance_usd).toBe(1);
  });

  it("create without --json prints the key on a line of its own", async () => {
    const r = await gateway(["key", "create", "--email", owner, "--db", db]);
    expect(r.code).toBe(0);
    const keys = r.stdout.split("\n").filter((l) => /^gk_sk_\w+$/.test(l));
    expect(keys).toHaveLength(1);
  });

  it("create records the restrictions the key is sold with", async () => {
    const k = await run<CreatedKey>("key", "create", "--email", owner, "--quota", "0.5", "--models", "demo", "--rpm", "5");
    const view = await me(k.key);
    // Stored by canonical id: "demo" is an alias of the demo catalog's demo-text-1.
    expect(view.key).toMatchObject({ models: ["demo-text-1"], quota: { limit_usd: 0.5 } });
    expect(view.limits.rpm).toBe(5);
  });

  it("list shows every key by prefix and never the full key", async () => {
    const k = await run<CreatedKey>("key", "create", "--email", owner);
    const human = await gateway(["key", "list", "--email", owner, "--db", db]);
    const listed = await run<{ id: number; prefix: string; status: string }[]>("key", "list", "--email", owner);
    expect(listed.find((r) => r.id === k.id)).toMatchObject({ prefix: k.prefix, status: "active" });
    expect(JSON.stringify(listed)).not.toContain(k.key);
    expect(human.stdout).not.toContain(k.key);
    expect(human.stdout).toContain(k.prefix);
  });

  it("revoke makes the key answer 403 inactive on the server sharing the database", async () => {
    const k = await run<CreatedKey>("key", "create", "--email", owner);
    // Used first, so the server has the key in hand when the CLI revokes it.
    expect((await postJson(gw, "/v1/chat/completions", k.key, { model: "demo", max_tokens: 8, messages: hi })).status).toBe(200);
    expect(await run("key", "revoke", String(k.id))).toMatchObject({ id: k.id, revoked: true });
    const res = await postJson(gw, "/v1/chat/completions", k.key, { model: "demo", max_tokens: 8, messages: hi });
    await expectError(res, 403, "inactive", "permission_error");
    const listed = await run<{ id: number; status: string }[]>("key", "list", "--email", owner);
    expect(listed.find((r) => r.id === k.id)?.status).toBe("revoked");
  });

  it("create refuses an --expires that is not ISO 8601", async () => {
    const r = await gateway(["key", "create", "--email", owner, "--expires", "next tuesday", "--db", db]);
    expect(expectOneLineFailure(r)).toContain("--expires");
  });

  it("revoke refuses an id that names no key", async () => {
    expect(expectOneLineFailure(await gateway(["key", "revoke", "999999", "--db", db]))).toContain("no key with id 999999");
  });
});

describe("gateway logs", () => {
  it("show REQUEST_ID gives status, model and cost of a real request, and none of its content", async () => {
    const a = await gw.account(1);
    const secret = "purple-elephant-7731";
    const res = await postJson(gw, "/v1/chat/completions", a.key, { model: "demo", max_tokens: 32, messages: [{ role: "user", content: secret }] });
    const body = (await res.json()) as { usage: { cost_usd: number }; choices: { message: { content: string } }[] };
    const id = res.headers.get("x-gateway-request-id")!;
    const row = await run("logs", "show", id);
    expect(row).toMatchObject({ request_id: id, status: 200, model: "demo-text-1", path: "/v1/chat/completions" });
    expect(row.cost_usd).toBe(body.usage.cost_usd);
    const text = JSON.stringify(row);
    expect(text).not.toContain(secret);
    expect(text).not.toContain(body.choices[0]!.message.content.slice(0, 20));
    expect(text).not.toContain(a.key);
  });

  it("show names the error code of a failed request", async () => {
    const res = await postJson(gw, "/v1/messages", (await gw.account(1)).key, { model: "nope", max_tokens: 8, messages: hi });
    const row = await run("logs", "show", res.headers.get("x-gateway-request-id")!);
    expect(row).toMatchObject({ status: 404, error_code: "model_not_found" });
  });

  it("show of an unknown request id exits non-zero with a reason", async () => {
    expect(expectOneLineFailure(await gateway(["logs", "show", "gw_unknown", "--db", db]))).toContain("gw_unknown");
  });

  it("prune removes rows older than 90 days and keeps the recent ones", async () => {
    const made = (await fetch(`${gw.url}/v1/models`)).headers.get("x-gateway-request-id")!;
    const recent = (await fetch(`${gw.url}/v1/models`)).headers.get("x-gateway-request-id")!;
    // Age a row as 91 days pass would: request ids begin with the time they were made.
    const ninetyOneDaysAgo = Date.now() - 91 * 24 * 3600 * 1000;
    const old = `${requestIdPrefixAt(ninetyOneDaysAgo)}${made.slice(requestIdPrefixAt(0).length)}`;
    gw.services.db.$client.prepare("UPDATE request_logs SET created_at = ?, request_id = ? WHERE request_id = ?").run(ninetyOneDaysAgo, old, made);
    expect(await run("logs", "prune")).toMatchObject({ removed: 1 });
    expect((await gateway(["logs", "show", old, "--db", db])).code).not.toBe(0);
    expect(await run("logs", "show", recent)).toMatchObject({ request_id: recent });
  });
});

describe("gateway migrate", () => {
  const install = tempInstallation();
  afterAll(() => install.remove());

  it("applies the migrations to a new database, and none the second time", async () => {
    const first = await gatewayJson<{ applied: number; database: string }>(["migrate", "--db", install.db]);
    expect(first.database).toBe(install.db);
    expect(first.applied).toBeGreaterThan(0);
    expect(await gatewayJson(["migrate", "--db", install.db])).toMatchObject({ applied: 0 });
  });

  it("is refused in one line while a gateway serve holds the database", async () => {
    const line = expectOneLineFailure(await gateway(["migrate", "--db", db]));
    expect(line).toContain(`a 'gateway serve' is running on ${db}: stop it first`);
    // The server it was refused beside still serves.
    expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
  });
});

describe("bad input", () => {
  it("an unknown command exits non-zero with one line", async () => {
    expect(expectOneLineFailure(await gateway(["acount", "create"]))).toContain("unknown command 'acount'");
  });

  it("an unknown flag exits non-zero with one line", async () => {
    expect(expectOneLineFailure(await gateway(["key", "list", "--emial", "a@b.c", "--db", db]))).toContain("--emial");
  });

  it("a missing required flag exits non-zero with one line", async () => {
    expect(expectOneLineFailure(await gateway(["account", "create", "--db", db]))).toBe("gateway: --email is required");
  });

  it("an amount that is not USD exits non-zero with one line", async () => {
    expect(expectOneLineFailure(await gateway(["account", "create", "--email", email(), "--balance", "ten", "--db", db]))).toContain("ten");
  });

  it("an unknown account exits non-zero with one line", async () => {
    expect(expectOneLineFailure(await gateway(["key", "create", "--email", "nobody@cli.test", "--db", db]))).toContain("no account");
  });

  it("with --json, a failure is a JSON error document and a non-zero exit", async () => {
    const r = await gateway(["key", "create", "--email", "nobody@cli.test", "--db", db, "--json"]);
    expect(r.code).not.toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ error: "no account with email nobody@cli.test" });
  });
});
