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
