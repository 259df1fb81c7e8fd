// docs/database.md is what an operator runs against the file; its queries must stay true to the schema.
import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { messagesBody, postWithApiKey, sqlAll } from "../support/keyed.ts";

const doc = readFileSync(join(import.meta.dir, "../../docs/database.md"), "utf8");
const queries = [...doc.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]!.trim());

let gw: TestGateway;
let requestId: string;
beforeAll(async () => {
  gw = await startTestGateway();
  const a = await gw.account(1);
  for (let i = 0; i < 3; i++) {
    const res = await postWithApiKey(gw, "/v1/messages", messagesBody(64, "demo"), a.key);
    expect(res.status).toBe(200);
    requestId = res.headers.get("x-gateway-request-id")!;
  }
});
afterAll(() => gw.stop());

describe("docs/database.md", () => {
  it("has its reconciliation query first, and it finds nothing after real charges", () => {
    expect(queries[0]).toContain("ledger_entries");
    expect(sqlAll(gw, queries[0]!)).toEqual([]);
  });

  it("finds the account whose balance was changed without a ledger row", () => {
    gw.services.db.$client.run("UPDATE accounts SET balance_nano = balance_nano + 1 WHERE id = (SELECT MIN(id) FROM accounts)");
    expect(sqlAll(gw, queries[0]!).length).toBe(1);
    gw.services.db.$client.run("UPDATE accounts SET balance_nano = balance_nano - 1 WHERE id = (SELECT MIN(id) FROM accounts)");
  });

  it("finds the key whose spend was changed without a charge row", () => {
    gw.services.db.$client.run("UPDATE api_keys SET spent_nano = spent_nano + 1 WHERE id = (SELECT MIN(id) FROM api_keys)");
    expect(sqlAll(gw, queries[0]!)).toMatchObject([{ what: "key" }]);
    gw.services.db.$client.run("UPDATE api_keys SET spent_nano = spent_nano - 1 WHERE id = (SELECT MIN(id) FROM api_keys)");
  });

  it("runs every example query against the schema", () => {
    for (const q of queries) {
      for (const statement of q.replaceAll("gw_…", requestId).split(";").map((s) => s.trim()).filter(Boolean)) {
        expect(() => sqlAll(gw, statement)).not.toThrow();
      }
    }
  });

  it("finds a request by the id its answer carried", () => {
    const byId = queries.find((q) => q.includes("FROM request_logs WHERE request_id = 'gw_…'"))!;
    expect(sqlAll(gw, byId.split(";")[0]!.replace("gw_…", requestId))).toHaveLength(1);
  });
});
