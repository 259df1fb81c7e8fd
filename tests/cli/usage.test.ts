import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expectOneLineFailure, gateway, gatewayJson, ROOT, tempInstallation } from "../support/cli.ts";

// Each test runs the CLI as a process: seconds on a loaded machine.
setDefaultTimeout(30_000);

// The CLI explains itself and refuses bad input in one line.

const install = tempInstallation();
const db = install.db;
const owner = "owner@usage.test";
beforeAll(async () => {
  await gatewayJson(["migrate", "--db", db]);
  await gatewayJson(["account", "create", "--email", owner, "--db", db]);
});
afterAll(() => install.remove());

const fails = async (...args: string[]) => expectOneLineFailure(await gateway([...args, "--db", db]));
const createKey = (...flags: string[]) => fails("key", "create", "--email", owner, ...flags);

describe("help", () => {
  it("gateway alone prints the usage and exits 0", async () => {
    const r = await gateway([]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("gateway account list");
    expect(r.stdout).toContain("gateway key update ID");
  });

  it("gateway --help shows the budget flags on key create and key update", async () => {
    const lines = (await gateway(["--help"])).stdout.split("\n");
    for (const sub of ["create", "update"]) {
      expect(lines.find((l) => l.includes(`gateway key ${sub} `))).toContain("--budget-period day|week|month");
    }
  });

  it("gateway --help prints the usage and exits 0", async () => {
    const r = await gateway(["--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Usage:");
  });

  for (const command of ["serve", "migrate", "account", "key", "pause", "resume", "logs", "usage"]) {
    it(`gateway ${command} --help prints that command's usage and exits 0 without opening a database`, async () => {
      const r = await gateway([command, "--help", "--db", join(install.dir, "absent.db")]);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`gateway ${command}`);
      expect(r.stderr).toBe("");
    });
  }

  // The summary is where an operator looks first: a flag only a command's own help names is one they never find.
  it("gateway --help names every flag that each command's own usage names", async () => {
    const flags = (text: string) => new Set(text.match(/--[a-z0-9-]+/g) ?? []);
    const usageBlock = (text: string) => text.slice(0, text.indexOf("\n\n"));
    const summary = flags((await gateway(["--help"])).stdout);
    const missing: string[] = [];
    for (const command of ["serve", "migrate", "migrate-db", "account", "key", "code", "pause", "logs", "usage", "prices", "reload", "config", "healthcheck"]) {
      for (const flag of flags(usageBlock((await gateway([command, "--help"])).stdout))) if (flag !== "--json" && !summary.has(flag)) missing.push(`${command} ${flag}`);
    }
    expect(missing).toEqual([]);
  });

  it("gateway key create --help shows the key flags", async () => {
    const r = await gateway(["key", "create", "--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("--quota USD|none");
  });

  it("account --help says that create without --balance credits 1 USD", async () => {
    expect((await gateway(["account", "--help"])).stdout).toContain("create without --balance credits the starting balance of 1 USD");
  });

  it("gateway --version prints the version of package.json", async () => {
    const r = await gateway(["--version"]);
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string };
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(`gateway ${pkg.version}`);
  });
});

describe("the options every command takes", () => {
  it("may come before the command: gateway --db FILE --json account list", async () => {
    const r = await gateway(["--db", db, "--json", "account", "list"]);
    expect(r.code).toBe(0);
    expect((JSON.parse(r.stdout) as { email: string }[]).map((a) => a.email)).toContain(owner);
  });
});

describe("refused with a one-line reason", () => {
  it("--ip ''", async () => expect(await createKey("--ip", "")).toContain("--ip"));
  it("--ip with a bad CIDR", async () => expect(await createKey("--ip", "10.0.0.0/33")).toContain("--ip"));
  it("--models ''", async () => expect(await createKey("--models", "")).toContain("--models"));
  it("a model the catalog does not have in --models", async () => expect(await createKey("--models", "demo,gpt-9")).toStartWith("gateway: --models: no model 'gpt-9' in the built-in demo catalog"));
  it("--expires in the past", async () => expect(await createKey("--expires", "2020-01-01T00:00:00Z")).toContain("in the past"));
  it("--expires that is not a time", async () => expect(await createKey("--expires", "1")).toContain("--expires"));
  it("--expires 2099-02-30, a day February does not have", async () =>
    expect(await createKey("--expires", "2099-02-30")).toBe("gateway: --expires: 2099-02-30 is not a date: February 2099 has 28 days"));
  it("--expires 2099-13-01", async () => expect(await createKey("--expires", "2099-13-01")).toBe("gateway: --expires: 2099-13-01 is not a date: there is no month 13"));
  it("--expires 2099-02-29, not a leap year", async () => expect(await createKey("--expires", "2099-02-29T00:00:00Z")).toContain("February 2099 has 28 days"));
  it("--ip with a zone id", async () =>
    expect(await createKey("--ip", "10.0.0.0/8,fe80::1%eth0")).toBe(
      "gateway: --ip: not an IP address or CIDR: fe80::1%eth0 (a zone id such as %eth0 names a network interface, not an address)",
    ));
  it("--rpm 0", async () => expect(await createKey("--rpm", "0")).toContain("--rpm"));
  it("--rpm that is not a number", async () => expect(await createKey("--rpm", "fast")).toContain("--rpm"));
  it("a negative --quota", async () => expect(await createKey("--quota", "-1")).toContain("--quota"));
  it("key revoke 1.0", async () => expect(await fails("key", "revoke", "1.0")).toContain("'1.0'"));
  it("key update 1e3", async () => expect(await fails("key", "update", "1e3", "--rpm", "5")).toContain("'1e3'"));
  it("an extra word: gateway pause now", async () => expect(await fails("pause", "now")).toBe("gateway: unexpected argument 'now'"));
  it("an extra word after key revoke ID", async () => expect(await fails("key", "revoke", "1", "2")).toBe("gateway: unexpected argument '2'"));
  it("a flag another subcommand takes", async () => expect(await fails("account", "list", "--usd", "1")).toContain("--usd"));
  it("a negative --usd", async () => expect(await fails("account", "credit", "--email", owner, "--usd", "-1")).toBe("gateway: --usd: '-1' is not an amount this flag takes: negative amounts are refused"));
  it("a negative --usd written --usd=-1", async () => expect(await fails("account", "credit", "--email", owner, "--usd=-1")).toContain("negative"));
  it("an --email holding a line break, which the reason quotes on its one line", async () =>
    expect(await fails("account", "create", "--email", "a\nb@usage.test")).toBe("gateway: not an email address: a\\nb@usage.test"));
  it("a non-numeric --balance", async () => expect(await fails("account", "create", "--email", "x@usage.test", "--balance", "lots")).toContain("--balance"));
  it("a subcommand that does not exist", async () => expect(await fails("account", "delete", "--email", owner)).toContain("account needs one of"));
  it("--csv with --json, as a JSON error document", async () => {
    const r = await gateway(["usage", "--csv", "--json", "--db", db]);
    expect(r.code).not.toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ error: "--csv and --json: choose one" });
  });
});

describe("--json", () => {
  it("prints money as JSON numbers of USD, never strings", async () => {
    const created = await gatewayJson<Record<string, unknown>>(["account", "create", "--email", "money@usage.test", "--balance", "0.000000001", "--db", db]);
    expect(created.balance_usd).toBe(1e-9);
    const credited = await gatewayJson<Record<string, unknown>>(["account", "credit", "--email", "money@usage.test", "--usd", "1234.5", "--db", db]);
    expect(credited).toMatchObject({ credited_usd: 1234.5, balance_usd: 1234.500000001 });
    const key = await gatewayJson<Record<string, unknown>>(["key", "create", "--email", "money@usage.test", "--quota", "0.25", "--db", db]);
    expect(key).toMatchObject({ quota_usd: 0.25, spent_usd: 0 });
  });
});
