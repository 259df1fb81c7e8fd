import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { expectOneLineFailure, gateway, gatewayJson } from "../support/cli.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { hi, postJson } from "../support/http.ts";
import { expectError } from "../support/errors.ts";

// Each test starts gateway processes; on a loaded 2-core machine that takes more than the default 5 s.
setDefaultTimeout(30_000);

// gateway key find and key update, against the database of a running server.

let gw: TestGateway;
let db: string;
let owner: string;
beforeAll(async () => {
  gw = await startTestGateway();
  db = gw.config.database;
  owner = `keys${process.pid}@cli.test`;
  await run("account", "create", "--email", owner, "--balance", "5");
});
afterAll(() => gw.stop());

const run = <T = Record<string, any>>(...args: string[]) => gatewayJson<T>([...args, "--db", db]);
const newKey = (...flags: string[]) => run<{ id: number; key: string; prefix: string }>("key", "create", "--email", owner, ...flags);
const chat = (key: string, model = "demo") => postJson(gw, "/v1/chat/completions", key, { model, max_tokens: 8, messages: hi });
const me = async (key: string) => (await fetch(`${gw.url}/v1/me`, { headers: { authorization: `Bearer ${key}` } })).json() as Promise<Record<string, any>>;

describe("key find", () => {
  it("names the account that owns a key, from its visible prefix", async () => {
    const k = await newKey();
    expect(await run("key", "find", k.prefix)).toEqual([expect.objectContaining({ id: k.id, prefix: k.prefix, account: owner, status: "active" })]);
  });

  it("takes the prefix without gk_sk_", async () => {
    const k = await newKey();
    expect((await run<{ id: number }[]>("key", "find", k.prefix.slice(6))).map((r) => r.id)).toContain(k.id);
  });

  it("takes a leaked whole key, matches it by its hash and never prints it", async () => {
    const k = await newKey();
    const r = await gateway(["key", "find", k.key, "--db", db]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(owner);
    expect(r.stdout).toContain(k.prefix);
    expect(r.stdout + r.stderr).not.toContain(k.key);
    expect(await run("key", "find", k.key)).toEqual([expect.objectContaining({ id: k.id })]);
  });

  it("finds no key for a made-up whole key with a real prefix (the hash decides), and does not echo it", async () => {
    const k = await newKey();
    const fake = k.prefix + "Z".repeat(40 - 6);
    const line = expectOneLineFailure(await gateway(["key", "find", fake, "--db", db]));
    expect(line).toContain("no key matches");
    expect(line).not.toContain(fake);
  });

  it("works with a text longer than the stored prefix", async () => {
    const k = await newKey();
    expect((await run<{ id: number }[]>("key", "find", k.key.slice(0, 16))).map((r) => r.id)).toEqual([k.id]);
  });
});

describe("key update", () => {
  it("changes quota, models and rpm, and the running server applies them to a key it already holds", async () => {
    const k = await newKey();
    expect((await chat(k.key)).status).toBe(200);
    const out = await run("key", "update", String(k.id), "--quota", "0.75", "--models", "demo-text-1", "--rpm", "7");
    expect(out).toMatchObject({ id: k.id, quota_usd: 0.75, models: ["demo-text-1"], rpm: 7 });
    const view = await me(k.key);
    expect(view.key).toMatchObject({ models: ["demo-text-1"], quota: { limit_usd: 0.75 } });
    expect(view.limits.rpm).toBe(7);
  });

  it("none removes a restriction, and a flag left out keeps its value", async () => {
    const k = await newKey("--quota", "1", "--models", "demo", "--rpm", "9", "--name", "ci");
    const out = await run("key", "update", String(k.id), "--models", "none");
    expect(out).toMatchObject({ models: null, quota_usd: 1, rpm: 9, name: "ci" });
  });

  it("an --ip the caller is not in makes the running server refuse the key with 403 ip", async () => {
    const k = await newKey();
    expect((await chat(k.key)).status).toBe(200);
    await run("key", "update", String(k.id), "--ip", "10.1.2.0/24");
    await expectError(await chat(k.key), 403, "ip", "permission_error");
    await run("key", "update", String(k.id), "--ip", "none");
    expect((await chat(k.key)).status).toBe(200);
  });

  it("an --expires sets the expiry the server enforces, and none clears it", async () => {
    const k = await newKey();
    const at = new Date(Date.now() + 3_600_000).toISOString();
    expect(await run("key", "update", String(k.id), "--expires", at)).toMatchObject({ expires_at: at });
    expect(await run("key", "update", String(k.id), "--expires", "none")).toMatchObject({ expires_at: null });
  });

  it("refuses what create refuses, with the same reasons", async () => {
    const k = await newKey();
    for (const [flag, value] of [["--models", "gpt-9"], ["--models", ""], ["--ip", ""], ["--expires", "2001-01-01"], ["--rpm", "0"], ["--quota", "-3"]] as const) {
      const update = expectOneLineFailure(await gateway(["key", "update", String(k.id), flag, value, "--db", db]));
      const create = expectOneLineFailure(await gateway(["key", "create", "--email", owner, flag, value, "--db", db]));
      expect(update).toBe(create);
    }
  });

  it("refuses an id that names no key, and an update with nothing to change", async () => {
    expect(expectOneLineFailure(await gateway(["key", "update", "999999", "--rpm", "3", "--db", db]))).toBe("gateway: no key with id 999999");
    const k = await newKey();
    expect(expectOneLineFailure(await gateway(["key", "update", String(k.id), "--db", db]))).toContain("nothing to update");
  });

  it("a model the key may no longer use is refused by the server with 403 model", async () => {
    const k = await newKey();
    expect((await chat(k.key)).status).toBe(200);
    await run("key", "update", String(k.id), "--models", "demo-image-1");
    await expectError(await chat(k.key), 403, "model", "permission_error");
  });
});

describe("key budgets", () => {
  const nextUtcMidnight = () => {
    const d = new Date();
    return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1)).toISOString();
  };

  it("create sets a daily budget, shown by create, list and list --json, and by the running server's /v1/me", async () => {
    const before = nextUtcMidnight();
    const k = await newKey("--budget", "5", "--budget-period", "day");
    expect(k).toMatchObject({ budget_usd: 5, budget_period: "day", budget_spent_usd: 0 });
    // The run may cross a UTC midnight.
    expect([before, nextUtcMidnight()]).toContain((k as unknown as { budget_resets_at: string }).budget_resets_at);
    const listed = await run<Record<string, unknown>[]>("key", "list", "--email", owner);
    expect(listed.find((r) => r.id === k.id)).toMatchObject({ budget_usd: 5, budget_period: "day" });
    const human = await gateway(["key", "list", "--email", owner, "--db", db]);
    expect(human.stdout.split("\n").find((l) => l.startsWith(`${k.id}\t`))).toContain("budget 0 of 5 USD today");
    expect((await me(k.key)).key.budget).toMatchObject({ limit_usd: 5, period: "day", spent_usd: 0, remaining_usd: 5 });
  });

  it("update changes a budget's amount and period, and none removes it", async () => {
    const k = await newKey("--budget", "5", "--budget-period", "day");
    expect(await run("key", "update", String(k.id), "--budget", "2.5", "--budget-period", "week")).toMatchObject({ budget_usd: 2.5, budget_period: "week" });
    expect(await run("key", "update", String(k.id), "--budget", "none")).toMatchObject({ budget_usd: null, budget_period: null, budget_spent_usd: null });
    expect((await me(k.key)).key.budget).toBeNull();
  });

  it("a spent budget makes the running server refuse the key with 429 quota and Retry-After to the reset", async () => {
    const k = await newKey("--budget", "0", "--budget-period", "month");
    const res = await chat(k.key);
    const err = await expectError(res, 429, "quota", "insufficient_quota");
    expect(err.message).toContain("monthly budget of 0.00 USD is spent; it resets at ");
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(res.headers.get("x-should-retry")).toBe("false");
  });

  it("refuses a negative budget, an unknown period, and an amount or a period alone", async () => {
    const k = await newKey();
    const cases: [string[], string][] = [
      [["--budget", "-1", "--budget-period", "day"], "--budget: '-1' is not an amount this flag takes: negative amounts are refused"],
      [["--budget", "5", "--budget-period", "year"], "--budget-period: a budget resets each day, week or month (UTC), not each year"],
      [["--budget", "5"], "--budget-period: give the budget's period with its amount"],
      [["--budget-period", "day"], "--budget: give the budget's amount in USD with its period"],
      [["--budget", "none", "--budget-period", "day"], "--budget-period: a budget removed takes no period"],
    ];
    for (const [flags, why] of cases) {
      expect(expectOneLineFailure(await gateway(["key", "update", String(k.id), ...flags, "--db", db]))).toContain(why);
      if (flags[1] !== "none") expect(expectOneLineFailure(await gateway(["key", "create", "--email", owner, ...flags, "--db", db]))).toContain(why);
    }
    expect(await run("key", "list", "--email", owner).then((rows) => (rows as unknown as { id: number; budget_usd: unknown }[]).find((r) => r.id === k.id)?.budget_usd)).toBeNull();
  });
});
