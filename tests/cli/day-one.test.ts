import { afterAll, describe, expect, it } from "bun:test";
import { expectOneLineFailure, gateway, serve, tempInstallation } from "../support/cli.ts";

// What an operator meets on day one with a production-like config: commands that never call a
// provider run without the providers' secrets, the CLI's refusals read as one clean line each, and
// serve says so when registration is open on real providers.

const REAL = (registration?: string) => `[server]
host = "127.0.0.1"
${registration ? `[dashboard]\nregistration = "${registration}"\n` : ""}
[[providers]]
id = "anthropic"
kind = "anthropic"
base_url = "http://127.0.0.1:9"
api_key = "\${GATEWAY_TEST_UNSET_ANTHROPIC_KEY}"

[[models]]
id = "claude-sonnet-4-5"
modalities = ["text"]
endpoints = ["messages"]
pricing = { input = 3.0, output = 15.0 }
routes = [{ provider = "anthropic", model = "claude-sonnet-4-5-20250929" }]
`;

const prod = tempInstallation(REAL());
const bare = tempInstallation();
afterAll(() => {
  prod.remove();
  bare.remove();
});
const withProd = (...args: string[]) => gateway([...args, "--db", prod.db], { env: { GATEWAY_CONFIG: prod.config } });

describe("commands that call no provider", () => {
  it("run with the providers' ${ENV} secrets unset (migrate, account create, key create, usage)", async () => {
    for (const args of [["migrate"], ["account", "create", "--email", "op@day.one"], ["key", "create", "--email", "op@day.one", "--models", "claude-sonnet-4-5"], ["usage"]]) {
      const r = await withProd(...args);
      expect(`${args.join(" ")}: ${r.code} ${r.stderr}`).toBe(`${args.join(" ")}: 0 gateway: database ${prod.db}\n`);
    }
  }, 60_000);

  it("serve still refuses to start without them", async () => {
    const r = await gateway(["serve", "--config", prod.config, "--db", prod.db, "--port", "0"]);
    expect(expectOneLineFailure(r)).toContain("environment variable GATEWAY_TEST_UNSET_ANTHROPIC_KEY is not set");
  }, 60_000);
});

describe("key create --models without a config file", () => {
  it("says the check was against the built-in demo catalog", async () => {
    await gateway(["migrate", "--db", bare.db]);
    await gateway(["account", "create", "--email", "op@day.one", "--db", bare.db]);
    const line = expectOneLineFailure(await gateway(["key", "create", "--email", "op@day.one", "--models", "claude-sonnet-4-5", "--db", bare.db]));
    expect(line).toContain("no model 'claude-sonnet-4-5' in the built-in demo catalog");
    expect(line).not.toContain("this installation's catalog");
  }, 60_000);
});

describe("usage errors", () => {
  it("an unknown flag is one clean line naming the command, exit 2", async () => {
    const r = await gateway(["key", "create", "--foo", "--db", bare.db]);
    expect(r.code).toBe(2);
    expect(expectOneLineFailure(r)).toBe("gateway: unknown option --foo for 'gateway key create'; see bun run gateway key create --help");
  }, 60_000);

  it("every amount flag refuses a bad amount in the same words", async () => {
    const lines: string[] = [];
    for (const [flag, args] of [
      ["usd", ["account", "credit", "--email", "op@day.one"]],
      ["balance", ["account", "create", "--email", "two@day.one"]],
      ["quota", ["key", "create", "--email", "op@day.one"]],
      ["budget", ["key", "create", "--email", "op@day.one", "--budget-period", "day"]],
    ] as const) {
      for (const bad of ["-1", "abc"]) {
        const line = expectOneLineFailure(await gateway([...args, `--${flag}`, bad, "--db", bare.db]));
        lines.push(line.replace(`--${flag}`, "--FLAG"));
      }
    }
    expect(new Set(lines.filter((l) => l.includes("'-1'"))).size).toBe(1);
    expect(new Set(lines.filter((l) => l.includes("'abc'"))).size).toBe(1);
    expect(lines[0]).toBe("gateway: --FLAG: '-1' is not an amount this flag takes: negative amounts are refused");
  }, 60_000);

  it("hints name the form that works from a checkout: bun run gateway", async () => {
    const line = expectOneLineFailure(await gateway(["account", "list", "--db", `${bare.dir}/none.db`]));
    expect(line).toContain("(bun run gateway migrate or bun run gateway serve creates one)");
  }, 60_000);
});

describe("gateway serve on real providers", () => {
  const startedWith = async (text: string) => {
    const install = tempInstallation(text);
    const server = await serve(["--config", install.config, "--port", "0", "--db", install.db]);
    const printed = await server.stop();
    install.remove();
    return printed;
  };

  it("prints one line when registration is open", async () => {
    const printed = await startedWith(REAL().replace("${GATEWAY_TEST_UNSET_ANTHROPIC_KEY}", "sk-test"));
    expect(printed.split("\n").filter((l) => l.includes("registration is open on real providers"))).toHaveLength(1);
  }, 60_000);

  it("prints none when registration is by invitation", async () => {
    const printed = await startedWith(REAL("invite").replace("${GATEWAY_TEST_UNSET_ANTHROPIC_KEY}", "sk-test"));
    expect(printed).toContain("listening on");
    expect(printed).not.toContain("registration is open");
  }, 60_000);
});
