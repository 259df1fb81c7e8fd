import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { openDatabase } from "../../src/store/engine/sqlite/client.ts";
import { generateKey } from "../../src/store/keys/rows.ts";
import { hashKey, KEY_PREFIX } from "../../src/store/keys/contract.ts";
import { presentedKey } from "../../src/auth/presented-key.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { postWithApiKey, sqlGet } from "../support/keyed.ts";
import { errorOf, type WireError } from "../support/errors.ts";

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ limits: { default_rpm: 10_000 } });
});
afterAll(() => gw.stop());

const ask = (model = "demo", maxTokens = 20) => ({ model, max_tokens: maxTokens, messages: [{ role: "user", content: "hi" }] });
const send = (key: string | null, body: unknown = ask(), headers: Record<string, string> = {}) => postWithApiKey(gw, "/v1/chat/completions", body, key, headers);
const UNKNOWN = `${KEY_PREFIX}${"A".repeat(40)}`;

/** Revokes as `gateway key revoke` does: from another process's connection to the database file. */
function revokeElsewhere(keyId: number): void {
  const cli = openDatabase(gw.config.database);
  cli.$client.prepare("UPDATE api_keys SET revoked_at = ? WHERE id = ?").run(Date.now(), keyId);
  cli.$client.close();
}

/** Status, the error object and the request-id header agree with the spec's error shape. */
async function refused(res: Response, status: number, code: string): Promise<WireError> {
  expect(res.status).toBe(status);
  const body = (await res.json()) as { error: WireError };
  expect(Object.keys(body)).toEqual(["error"]);
  expect(Object.keys(body.error).sort()).toEqual(["code", "message", "request_id", "type"]);
  expect(body.error.code).toBe(code);
  expect(body.error.request_id).toMatch(/^gw_/);
  expect(res.headers.get("x-gateway-request-id")).toBe(body.error.request_id);
  return body.error;
}

describe("keys", () => {
  it("are gk_sk_ plus 40 base62 characters, stored only as a sha256 hash with a short visible prefix", async () => {
    const a = await gw.account(1);
    expect(a.key).toMatch(/^gk_sk_[A-Za-z0-9]{40}$/);
    const row = sqlGet<{ key_hash: string; prefix: string }>(gw, "SELECT key_hash, prefix FROM api_keys WHERE id = ?", a.keyId);
    expect(row.key_hash).toBe(hashKey(a.key));
    expect(row.prefix).toBe(a.key.slice(0, 12));
  });

  it("are never generated twice", () => {
    const seen = new Set(Array.from({ length: 1000 }, generateKey));
    expect(seen.size).toBe(1000);
  });

  it("are read from x-api-key first, else from Authorization: Bearer (any case)", () => {
    expect(presentedKey(new Headers({ "x-api-key": " k1 ", authorization: "Bearer k2" }))).toBe("k1");
    expect(presentedKey(new Headers({ authorization: "Bearer k2" }))).toBe("k2");
    expect(presentedKey(new Headers({ authorization: "bearer   k3" }))).toBe("k3");
    expect(presentedKey(new Headers({ authorization: "Basic k4" }))).toBeNull();
    expect(presentedKey(new Headers({ authorization: "Bearer " }))).toBeNull();
    expect(presentedKey(new Headers())).toBeNull();
  });

  it("take a Bearer key after any run of spaces, tabs or no-break spaces, and none glued to the word", () => {
    const bearer = (v: string) => presentedKey(new Headers({ authorization: v }));
    expect(bearer("Bearer\tk5")).toBe("k5");
    expect(bearer("BEARER \t k6")).toBe("k6");
    expect(bearer("Bearer\u00a0k7")).toBe("k7");
    expect(bearer("bEaReR k8 ")).toBe("k8");
    expect(bearer("Bearerk9")).toBeNull();
    expect(bearer("Bearer  \u00a0 ")).toBeNull();
  });
});

describe("401 no-key", () => {
  it("answers a request without a key", async () => {
    const e = await refused(await send(null), 401, "no-key");
    expect(e.type).toBe("authentication_error");
    expect(e.message).toContain("Missing API key");
  });

  it("answers an unknown key", async () => {
    expect((await refused(await send(UNKNOWN), 401, "no-key")).message).toBe("Invalid API key.");
  });

  it("answers a malformed key exactly like an unknown one, so answers never tell which keys exist", async () => {
    const strip = (res: Response, e: WireError) => ({
      status: res.status,
      type: e.type,
      code: e.code,
      message: e.message,
      headers: [...res.headers].filter(([k]) => !["x-gateway-request-id", "request-id", "x-request-id", "date", "content-length"].includes(k)),
    });
    const unknownRes = await send(UNKNOWN);
    const unknown = strip(unknownRes, await errorOf(unknownRes));
    for (const malformed of ["sk-ant-api03-xyz", "gk_sk_", "gk_sk_short", `${UNKNOWN}x`, UNKNOWN.toUpperCase(), "gk_sk_!@#$%"]) {
      const res = await send(malformed);
      expect(strip(res, await errorOf(res))).toEqual(unknown);
    }
  });

  it("answers a known key sent with the wrong scheme as if no key was sent", async () => {
    const a = await gw.account(1);
    await refused(await send(null, ask(), { authorization: `Basic ${a.key}` }), 401, "no-key");
  });
});

describe("accepted keys", () => {
  it("accepts the key in x-api-key", async () => {
    const a = await gw.account(1);
    expect((await send(a.key)).status).toBe(200);
  });

  it("accepts the key as Authorization: Bearer", async () => {
    const a = await gw.account(1);
    expect((await send(null, ask(), { authorization: `Bearer ${a.key}` })).status).toBe(200);
  });

  it("accepts a key whose expiry is still ahead", async () => {
    const a = await gw.account(1, { expiresAt: Date.now() + 60_000 });
    expect((await send(a.key)).status).toBe(200);
  });
});

describe("403 key restrictions", () => {
  it("refuses a revoked key with inactive", async () => {
    const a = await gw.account(1);
    revokeElsewhere(a.keyId);
    expect((await refused(await send(a.key), 403, "inactive")).type).toBe("permission_error");
  });

  it("refuses a key revoked by another process after it has been used", async () => {
    const a = await gw.account(1);
    expect((await send(a.key)).status).toBe(200);
    revokeElsewhere(a.keyId);
    await refused(await send(a.key), 403, "inactive");
  });

  it("refuses an expired key with expired", async () => {
    const a = await gw.account(1, { expiresAt: Date.now() - 1 });
    expect((await refused(await send(a.key), 403, "expired")).type).toBe("permission_error");
  });

  it("refuses a model outside the key's allow-list with model", async () => {
    const a = await gw.account(1, { models: ["demo-image-1"] });
    const e = await refused(await send(a.key), 403, "model");
    expect(e.type).toBe("permission_error");
    expect(e.message).toContain("demo-text-1");
  });

  it("resolves aliases on both sides of the allow-list", async () => {
    const byAlias = await gw.account(1, { models: ["demo"] });
    expect((await send(byAlias.key, ask("demo-text-1"))).status).toBe(200);
    const byId = await gw.account(1, { models: ["demo-text-1"] });
    expect((await send(byId.key, ask("demo-text"))).status).toBe(200);
  });

  it("checks the key before the body, so a revoked key with a bad body still gets inactive", async () => {
    const a = await gw.account(1);
    revokeElsewhere(a.keyId);
    await refused(await send(a.key, "{not json"), 403, "inactive");
  });
});

describe("money refusals", () => {
  it("refuses a key whose quota cannot hold the estimate with 429 quota, x-should-retry: false", async () => {
    const a = await gw.account(1, { quotaNano: 1000 });
    const res = await send(a.key);
    const e = await refused(res, 429, "quota");
    expect(e.type).toBe("insufficient_quota");
    expect(res.headers.get("x-should-retry")).toBe("false");
    expect(res.headers.get("retry-after")).toBeNull();
  });

  it("refuses an account that cannot cover the estimate with 402 insufficient_balance", async () => {
    const a = await gw.account("0.00001");
    const e = await refused(await send(a.key, ask("demo", 1000)), 402, "insufficient_balance");
    expect(e.type).toBe("insufficient_balance");
    expect(e.message).toContain("max_tokens");
  });

  it("checks the body before money, so an empty account with a bad body gets 400", async () => {
    const a = await gw.account(0);
    await refused(await send(a.key, "{not json"), 400, "invalid_request");
  });

  it("checks the model before money, so an empty account asking for a forbidden model gets 403 model", async () => {
    const a = await gw.account(0, { models: ["demo-image-1"] });
    await refused(await send(a.key), 403, "model");
  });
});
