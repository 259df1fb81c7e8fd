import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { expectOneLineFailure, gateway, gatewayJson } from "../support/cli.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";

// gateway account … on an account its holder closed (docs/dashboard.md#closing-the-account): shown
// as closed under its anonymised address; credit, enable and key create answer that closure is final.

setDefaultTimeout(30_000);

let gw: TestGateway;
let db: string;
let closed: string;
beforeAll(async () => {
  gw = await startTestGateway();
  db = gw.config.database;
  const acc = await gw.services.accounts.create(`closing${process.pid}@cli.test`, { balanceNano: 0 });
  await gw.services.accounts.close(acc.id, 0);
  closed = `closed-account-${acc.id}`;
});
afterAll(() => gw.stop());

const run = <T = Record<string, any>>(...args: string[]) => gatewayJson<T>([...args, "--db", db]);

describe("a closed account on the CLI", () => {
  it("is listed and shown as closed, with when", async () => {
    const rows = await run<Record<string, unknown>[]>("account", "list");
    expect(rows.find((r) => r.email === closed)).toMatchObject({ status: "closed" });
    const shown = await run("account", "show", "--email", closed);
    expect(shown.status).toBe("closed");
    expect(Date.parse(shown.closed_at)).toBeGreaterThan(Date.now() - 60_000);
  });

  const refused: [string, string[]][] = [
    ["account credit", ["account", "credit", "--usd", "1"]],
    ["account enable", ["account", "enable"]],
    ["key create", ["key", "create"]],
    ["account update --reset-2fa", ["account", "update", "--reset-2fa"]],
  ];
  it.each(refused)("refuses %s in one line: closure is final, nothing changes", async (_, args) => {
    const r = await gateway([...args.slice(0, 2), "--email", closed, ...args.slice(2), "--db", db]);
    expect(expectOneLineFailure(r)).toContain("closure is final");
    const shown = await run("account", "show", "--email", closed);
    expect([shown.balance_usd, shown.keys.length, shown.status]).toEqual([0, 0, "closed"]);
  });

  it("refuses account update --password-stdin in one line: a closed account gets no password back", async () => {
    const r = await gateway(["account", "update", "--email", closed, "--password-stdin", "--db", db], { stdin: "a password for no one\n" });
    expect(expectOneLineFailure(r)).toContain("closure is final");
    const id = Number(closed.replace("closed-account-", ""));
    expect((await gw.services.accounts.loginOf(id))!.passwordHash).toBeNull();
  });
});
