import { requestIdPrefixAt } from "../../src/core/request-id.ts";
import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { readFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrate, openDatabase } from "../../src/store/engine/sqlite/client.ts";
import { Reports } from "../../src/store/reports/sqlite.ts";
import { LOG_RETENTION_MS } from "../../src/store/request-log/contract.ts";
import { RequestLog } from "../../src/store/request-log/sqlite.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { getWithKey, postWithApiKey, sqlAll, sqlGet } from "../support/keyed.ts";
import { usdToNanoShown } from "../support/prices.ts";

// Spec: a request id reconstructs route, usage, cost and status, never content; logs are kept 90 days.
let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(() => gw.stop());

const PROMPT = "secret-prompt-marker-7f3a";
const chat = (maxTokens = 50) => ({ model: "demo", max_tokens: maxTokens, messages: [{ role: "user", content: PROMPT }] });
const rowOf = (res: Response) => sqlGet<Record<string, unknown> | null>(gw, "SELECT * FROM request_logs WHERE request_id = ?", res.headers.get("x-gateway-request-id")!);

describe("a request log row for every /v1 request", () => {
  it("records a served request's route, model, provider, tokens, cost and status", async () => {
    const a = await gw.account(1);
    const res = await postWithApiKey(gw, "/v1/chat/completions", chat(), a.key);
    const body = (await res.json()) as { usage: { prompt_tokens: number; completion_tokens: number; cost_usd: number } };
    expect(rowOf(res)).toMatchObject({
      key_id: a.keyId,
      account_id: a.accountId,
      method: "POST",
      path: "/v1/chat/completions",
      endpoint: "chat.completions",
      model: "demo-text-1",
      provider: "demo",
      stream: 0,
      status: 200,
      error_code: null,
      input_tokens: body.usage.prompt_tokens,
      output_tokens: body.usage.completion_tokens,
      cost_nano: usdToNanoShown(body.usage.cost_usd),
      attempts: 1,
    });
  });

  it("records a stream once it has ended", async () => {
    const a = await gw.account(1);
    const res = await postWithApiKey(gw, "/v1/messages", { ...chat(), stream: true }, a.key);
    await res.text();
    expect(rowOf(res)).toMatchObject({ stream: 1, status: 200, endpoint: "messages" });
    expect(rowOf(res)!.cost_nano).toBeGreaterThan(0);
  });

  it("records refusals with their status and error code, and no cost", async () => {
    const poor = await gw.account(0);
    const slow = await gw.account(1, { rpm: 1 });
    await (await getWithKey(gw, "/v1/me", slow.key)).text();
    const cases: [Promise<Response>, number, string][] = [
      [postWithApiKey(gw, "/v1/chat/completions", chat(), null), 401, "no-key"],
      [postWithApiKey(gw, "/v1/chat/completions", chat(), poor.key), 402, "insufficient_balance"],
      [getWithKey(gw, "/v1/me", slow.key), 429, "rate_limit"],
      [postWithApiKey(gw, "/v1/chat/completions", "{not json", poor.key), 400, "invalid_request"],
      [postWithApiKey(gw, "/v1/chat/completions", { ...chat(), model: "nope" }, poor.key), 404, "model_not_found"],
      [postWithApiKey(gw, "/v1/nowhere", {}, poor.key), 404, "endpoint_not_found"],
    ];
    for (const [pending, status, code] of cases) {
      const res = await pending;
      expect(res.status).toBe(status);
      expect(rowOf(res)).toMatchObject({ status, error_code: code, cost_nano: 0 });
    }
  });

  it("names the key and its account on the row of a known key it refuses (address off its list, revoked)", async () => {
    const fenced = await gw.account(1, { ipAllow: ["10.9.9.9"] });
    const revoked = await gw.account(1);
    await gw.services.keys.revoke(revoked.keyId);
    for (const [a, code] of [[fenced, "ip"], [revoked, "inactive"]] as const) {
      const res = await postWithApiKey(gw, "/v1/chat/completions", chat(), a.key);
      expect(res.status).toBe(403);
      expect(rowOf(res)).toMatchObject({ status: 403, error_code: code, key_id: a.keyId, account_id: a.accountId, cost_nano: 0 });
    }
  });

  it("records public /v1 requests too", async () => {
    const res = await fetch(`${gw.url}/v1/models`);
    expect(rowOf(res)).toMatchObject({ method: "GET", path: "/v1/models", status: 200, key_id: null });
  });

  it("keeps no prompt, no completion and no key in any log row", async () => {
    const a = await gw.account(1);
    const res = await postWithApiKey(gw, "/v1/chat/completions", chat(), a.key);
    const answer = ((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content;
    expect(answer).toContain(PROMPT.slice(0, 20)); // the demo model echoes the prompt, so both are checked
    const everything = JSON.stringify(sqlAll(gw, "SELECT * FROM request_logs"));
    expect(everything).not.toContain(PROMPT.slice(0, 20));
    expect(everything).not.toContain(a.key);
    expect(everything).not.toContain(a.key.slice(6, 20));
  });

  it("never writes a full key anywhere in the database file", async () => {
    const a = await gw.account(1);
    await (await postWithApiKey(gw, "/v1/chat/completions", chat(), a.key)).text();
    const file = join(gw.dir, "gateway.db");
    const bytes = [file, `${file}-wal`].filter(existsSync).map((f) => readFileSync(f).toString("latin1")).join("");
    expect(bytes).not.toContain(a.key.slice(6));
  });
});

describe("retention", () => {
  it("prunes rows older than 90 days and keeps younger ones", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gw-log-"));
    const db = openDatabase(join(dir, "gateway.db"));
    try {
      migrate(db);
      const logs = new RequestLog(db);
      const day = 24 * 3600 * 1000;
      const now = Date.now();
      // Ids as the gateway makes them at those times (they begin with the time).
      const old = `${requestIdPrefixAt(now - 91 * day)}tag01000001`;
      const young = `${requestIdPrefixAt(now - 89 * day)}tag01000002`;
      for (const id of [old, young]) logs.write({ requestId: id, method: "POST", path: "/v1/messages", status: 200, latencyMs: 5 });
      db.$client.prepare("UPDATE request_logs SET created_at = ? WHERE request_id = ?").run(now - 91 * day, old);
      db.$client.prepare("UPDATE request_logs SET created_at = ? WHERE request_id = ?").run(now - 89 * day, young);
      expect(LOG_RETENTION_MS).toBe(90 * day);
      expect(logs.prune(now)).toBe(1);
      expect(await new Reports(db).find(old)).toBeNull();
      expect(await new Reports(db).find(young)).not.toBeNull();
    } finally {
      db.$client.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
