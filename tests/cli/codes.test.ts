import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { readFileSync } from "node:fs";
import { expectOneLineFailure, gateway, gatewayJson } from "../support/cli.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { Browser } from "../api/support.ts";

// gateway code create / list (docs/operations.md#redemption-codes) against the database of a running
// server: the codes are printed once and stored only as hashes, and the server redeems them.

// Each command is a process of its own, and a registration an Argon2id hash: seconds on a loaded machine.
setDefaultTimeout(60_000);

let gw: TestGateway;
let db: string;
beforeAll(async () => {
  gw = await startTestGateway({ server: { trust_proxy: ["127.0.0.1"] } });
  db = gw.config.database;
});
afterAll(() => gw.stop());

const run = <T = Record<string, any>>(...args: string[]) => gatewayJson<T>([...args, "--db", db]);

describe("gateway code create", () => {
  it("prints K readable codes of 80 bits once, as one batch with its amount, note and expiry", async () => {
    const made = await run("code", "create", "--usd", "2.5", "--count", "3", "--expires", "2099-01-31", "--note", "launch");
    expect(made).toMatchObject({ usd: 2.5, count: 3, used: 0, note: "launch", expires_at: "2099-01-31T00:00:00.000Z", created_by_account_id: null });
    expect(made.codes).toHaveLength(3);
    expect(new Set(made.codes).size).toBe(3);
    for (const c of made.codes) expect(c).toMatch(/^GW(-[0-9A-HJKMNP-TV-Z]{4}){4}$/);
  });

  it("keeps no code in the database file, only hashes", async () => {
    const made = await run("code", "create", "--usd", "1", "--count", "5");
    // The WAL holds the newest pages until a checkpoint: both files are read.
    const bytes = readFileSync(db, "latin1") + (() => { try { return readFileSync(`${db}-wal`, "latin1"); } catch { return ""; } })();
    for (const c of made.codes as string[]) {
      expect(bytes).not.toContain(c);
      expect(bytes).not.toContain(c.replace(/^GW-/, "").replace(/-/g, ""));
    }
  });

  it("prints the codes for people, one a line, after the batch's line", async () => {
    const r = await gateway(["code", "create", "--usd", "1", "--count", "2", "--db", db]);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^batch \d+: 2 codes of 1 USD\. Shown once/);
    expect(lines.slice(1).every((l) => /^GW(-[0-9A-Z]{4}){4}$/.test(l))).toBe(true);
  });

  it("refuses an amount finer than a nano-dollar, zero, a past expiry and a count above 10000, in one line each", async () => {
    for (const args of [["--usd", "0.0000000001"], ["--usd", "0"], ["--usd", "1", "--expires", "2001-01-01"], ["--usd", "1", "--count", "10001"], ["--usd", "-1"]]) {
      expectOneLineFailure(await gateway(["code", "create", ...args, "--db", db]));
    }
  });

  it("mints a code the running server redeems once", async () => {
    const [code] = (await run("code", "create", "--usd", "4")).codes as string[];
    const b = new Browser(gw.url);
    await b.register();
    const first = await b.call("POST", "/api/redeem", { code });
    expect(first.status).toBe(200);
    expect(((await first.json()) as { balance_usd: number }).balance_usd).toBe(5);
    expect((await b.call("POST", "/api/redeem", { code })).status).toBe(400);
  });
});

describe("gateway code list", () => {
  it("lists batches newest first with used and unused counts and no code", async () => {
    const made = await run("code", "create", "--usd", "3", "--count", "2", "--note", "listed");
    const b = new Browser(gw.url);
    await b.register();
    await b.call("POST", "/api/redeem", { code: made.codes[1] });
    const list = await run<Record<string, unknown>[]>("code", "list");
    expect(list[0]).toMatchObject({ id: made.id, usd: 3, count: 2, used: 1, unused: 1, note: "listed", expired: false });
    expect(JSON.stringify(list)).not.toContain(made.codes[0]);
    const r = await gateway(["code", "list", "--db", db]);
    expect(r.stdout.split("\n")[0]).toMatch(/^batch\s+usd\s+count\s+used\s+unused\s+expires/);
  });
});
