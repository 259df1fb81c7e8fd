import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import type { TestGateway } from "../support/gateway.ts";
import { gatewayJson, tempInstallation } from "../support/cli.ts";
import { body, dashboardGateway, refusedWith, registeredBrowser, type Browser } from "./support.ts";

// Registration hashes a password with Argon2id: a few seconds a test on a loaded machine.
setDefaultTimeout(30_000);

// `[dashboard] max_keys_per_account` (default 50): the keys a holder makes at POST /api/keys. It had
// no cap: 200 creates in 318 ms, all 201, each key with buckets of its own.

let gw: TestGateway;
beforeAll(async () => {
  gw = await dashboardGateway();
});
afterAll(() => gw.stop());

const keyCount = (accountId: number) =>
  (gw.services.db.$client.query("SELECT count(*) AS n FROM api_keys WHERE account_id = ?").get(accountId) as { n: number }).n;

async function accountOf(b: Browser): Promise<number> {
  return (await body(await b.call("GET", "/api/me"))).id as number;
}

describe("POST /api/keys past [dashboard] max_keys_per_account (default 50)", () => {
  it("creates exactly 50 of 60 concurrent requests and refuses 10 with 409 key_limit, creating nothing for them", async () => {
    const b = await registeredBrowser(gw);
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => b.call("POST", "/api/keys", { name: `k${i}` })));
    const created = answers.filter((r) => r.status === 201);
    const refused = answers.filter((r) => r.status !== 201);
    expect(created).toHaveLength(50);
    expect(refused).toHaveLength(10);
    for (const r of refused) expect(await refusedWith(r, 409, "key_limit")).toContain("50 keys that are not revoked");
    await Promise.all(created.map((r) => r.text()));
    expect(keyCount(await accountOf(b))).toBe(50);
  });

  it("makes room for one more when a key is revoked", async () => {
    const b = await registeredBrowser(gw);
    const keys: { id: number }[] = [];
    for (let i = 0; i < 50; i++) keys.push(await body(await b.call("POST", "/api/keys", {})));
    await refusedWith(await b.call("POST", "/api/keys", {}), 409, "key_limit");
    expect((await b.call("DELETE", `/api/keys/${keys[0]!.id}`)).status).toBe(200);
    expect((await b.call("POST", "/api/keys", {})).status).toBe(201);
    await refusedWith(await b.call("POST", "/api/keys", {}), 409, "key_limit");
  });

  it("counts expired keys, which a new expiry makes usable again", async () => {
    const b = await registeredBrowser(gw);
    const accountId = await accountOf(b);
    for (let i = 0; i < 50; i++) await (await b.call("POST", "/api/keys", {})).text();
    gw.services.db.$client.query("UPDATE api_keys SET expires_at = 1 WHERE account_id = ?").run(accountId);
    await refusedWith(await b.call("POST", "/api/keys", {}), 409, "key_limit");
  });
});

describe("[dashboard] max_keys_per_account in the config", () => {
  it("caps at the configured number, and 0 lets the dashboard make none", async () => {
    for (const max of [2, 0]) {
      const small = await dashboardGateway({ dashboard: { max_keys_per_account: max } });
      try {
        const b = await registeredBrowser(small);
        for (let i = 0; i < max; i++) expect((await b.call("POST", "/api/keys", {})).status).toBe(201);
        const message = await refusedWith(await b.call("POST", "/api/keys", {}), 409, "key_limit");
        expect(message).toContain(max === 0 ? "ask its operator" : "2 keys that are not revoked");
      } finally {
        await small.stop();
      }
    }
  });

  it("does not limit the operator's gateway key create", async () => {
    const install = tempInstallation("[dashboard]\nmax_keys_per_account = 1\n");
    const run = <T>(...args: string[]) => gatewayJson<T>([...args, "--config", install.config, "--db", install.db]);
    try {
      await run("migrate");
      await run("account", "create", "--email", "ops@test.local");
      for (let i = 0; i < 3; i++) expect((await run<{ key: string }>("key", "create", "--email", "ops@test.local")).key).toStartWith("gk_sk_");
      expect(await run<unknown[]>("key", "list", "--email", "ops@test.local")).toHaveLength(3);
    } finally {
      install.remove();
    }
  });
});
