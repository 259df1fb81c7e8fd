import { afterAll, describe, expect, it } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigError, loadConfig, parseConfig } from "../../src/config/load.ts";
import { buildCatalog } from "../../src/catalog/catalog.ts";
import { expectOneLineFailure, gateway, tempInstallation } from "../support/cli.ts";

// DESIGN, Configuration: invalid config stops the start with the path of the bad field and a reason;
// ${ENV} is interpolated so secrets stay out of the file.

const demo = { id: "demo", kind: "demo" };
const textModel = (over: Record<string, unknown> = {}) => ({
  id: "m1",
  modalities: ["text"],
  endpoints: ["messages"],
  pricing: { input: 1, output: 2 },
  routes: [{ provider: "demo", model: "demo-text" }],
  ...over,
});

/** The message parseConfig refuses `raw` with. */
function refusal(raw: unknown, env: Record<string, string> = {}): string {
  try {
    parseConfig(raw, "gateway.toml", env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error("the config was accepted");
}

describe("parseConfig", () => {
  it("names server.port and the reason when the port is not an integer", () => {
    expect(refusal({ server: { port: "eighty" } })).toBe('gateway.toml: server.port: Expected integer (got "eighty")');
  });

  it("names server.port when the port is out of range", () => {
    expect(refusal({ server: { port: 70000 } })).toStartWith("gateway.toml: server.port: ");
  });

  it("names models[0].routes[0].provider when a route points at no provider", () => {
    const raw = { providers: [demo], models: [textModel({ routes: [{ provider: "nowhere", model: "x" }] })] };
    expect(refusal(raw)).toBe("gateway.toml: models[0].routes[0].provider: no provider with id 'nowhere'");
  });

  it("lists the allowed words when a provider kind is unknown", () => {
    expect(refusal({ providers: [{ id: "az", kind: "azure" }] })).toBe(
      'gateway.toml: providers[0].kind: expected one of anthropic, openai, demo (got "azure")',
    );
  });

  it("lists the allowed endpoints when a model names another", () => {
    const raw = { providers: [demo], models: [textModel({ endpoints: ["embeddings"] })] };
    expect(refusal(raw)).toContain("models[0].endpoints[0]: expected one of messages, chat.completions, images.generations, images.edits");
  });

  it("reads [dashboard] with its defaults: registration open, 1 USD starting credit, 50 USD of them a day, 30-day sessions, no support contact", () => {
    expect(parseConfig({}, "t").dashboard).toEqual({
      registration: "open",
      startingCreditNano: 1_000_000_000,
      startingCreditDailyNano: 50_000_000_000,
      sessionTtlMs: 30 * 86_400_000,
      maxKeysPerAccount: 50,
      supportContact: null,
    });
  });

  it("reads dashboard.registration = \"invite\" and dashboard.support_contact", () => {
    const d = parseConfig({ dashboard: { registration: "invite", support_contact: "billing@example.com" } }, "t").dashboard;
    expect([d.registration, d.supportContact]).toEqual(["invite", "billing@example.com"]);
  });

  it("reads dashboard.max_keys_per_account, 0 included (holders make no keys)", () => {
    expect(parseConfig({ dashboard: { max_keys_per_account: 3 } }, "t").dashboard.maxKeysPerAccount).toBe(3);
    expect(parseConfig({ dashboard: { max_keys_per_account: 0 } }, "t").dashboard.maxKeysPerAccount).toBe(0);
  });

  it.each([[-1], [2.5], ["50"]])("names dashboard.max_keys_per_account when it is %p", (bad) => {
    expect(refusal({ dashboard: { max_keys_per_account: bad } })).toStartWith("gateway.toml: dashboard.max_keys_per_account: ");
  });

  it("has no account-wide rate limit unless limits.account_rpm is set", () => {
    expect(parseConfig({}, "t").accountRpm).toBeNull();
    expect(parseConfig({ limits: { account_rpm: 120 } }, "t").accountRpm).toBe(120);
  });

  it.each([[0], [-5], [1.5], ["120"]])("names limits.account_rpm when it is %p", (bad) => {
    expect(refusal({ limits: { account_rpm: bad } })).toStartWith("gateway.toml: limits.account_rpm: ");
  });

  it("lists the allowed words when [dashboard] registration is neither open, invite nor closed", () => {
    expect(refusal({ dashboard: { registration: "invitation" } })).toBe('gateway.toml: dashboard.registration: expected one of open, invite, closed (got "invitation")');
  });

  it("names dashboard.starting_credit_usd when it is negative", () => {
    expect(refusal({ dashboard: { starting_credit_usd: -1 } })).toStartWith("gateway.toml: dashboard.starting_credit_usd: ");
  });

  it("names dashboard.starting_credit_usd when it has more than 9 decimals", () => {
    expect(refusal({ dashboard: { starting_credit_usd: 0.0000000001 } })).toBe(
      "gateway.toml: dashboard.starting_credit_usd: 0.0000000001 has 10 decimals, finer than the ledger's unit of 1 nano-dollar (0.000000001 USD): at most 9 decimals",
    );
  });

  it("names dashboard.starting_credit_daily_usd when it is negative or has more than 9 decimals", () => {
    expect(refusal({ dashboard: { starting_credit_daily_usd: -1 } })).toStartWith("gateway.toml: dashboard.starting_credit_daily_usd: ");
    expect(refusal({ dashboard: { starting_credit_daily_usd: 0.0000000001 } })).toMatch(/^gateway.toml: dashboard.starting_credit_daily_usd: .*10 decimals/);
  });

  it("reads dashboard.starting_credit_daily_usd exactly, 0 included", () => {
    expect(parseConfig({ dashboard: { starting_credit_daily_usd: 0.1 } }, "t").dashboard.startingCreditDailyNano).toBe(100_000_000);
    expect(parseConfig({ dashboard: { starting_credit_daily_usd: 0 } }, "t").dashboard.startingCreditDailyNano).toBe(0);
  });

  it("names an unknown field of [dashboard]", () => {
    expect(refusal({ dashboard: { stripe: true } })).toBe("gateway.toml: dashboard.stripe: unknown field (got true)");
  });

  it("names server.public_url when it is not an http(s) URL", () => {
    expect(refusal({ server: { public_url: "gateway.example.com" } })).toBe('gateway.toml: server.public_url: not an http(s) URL (got "gateway.example.com")');
  });

  it("names a missing required field", () => {
    const { routes: _, ...noRoutes } = textModel();
    expect(refusal({ providers: [demo], models: [noRoutes] })).toBe("gateway.toml: models[0].routes: required field is missing");
  });

  it("refuses an unknown top-level table", () => {
    expect(refusal({ sever: { port: 80 } })).toStartWith("gateway.toml: sever: unknown field");
  });

  it("refuses an unknown field inside a table, naming its path", () => {
    expect(refusal({ server: { prot: 80 } })).toBe("gateway.toml: server.prot: unknown field (got 80)");
  });

  it("refuses an unknown field inside a route", () => {
    const raw = { providers: [demo], models: [textModel({ routes: [{ provider: "demo", model: "x", wieght: 2 }] })] };
    expect(refusal(raw)).toStartWith("gateway.toml: models[0].routes[0].wieght: unknown field");
  });

  it("refuses a name used twice across ids and aliases", () => {
    const raw = { providers: [demo], models: [textModel(), textModel({ id: "m2", aliases: ["m1"] })] };
    expect(refusal(raw)).toContain("models[1].aliases[0]: 'm1' is already used by another model");
  });

  it("interpolates ${ENV} inside strings", () => {
    const raw = { providers: [{ id: "o", kind: "openai", base_url: "http://${HOST}/v1", api_key: "${OPENAI_KEY}" }] };
    const cfg = parseConfig(raw, "gateway.toml", { HOST: "10.0.0.5:8000", OPENAI_KEY: "sk-secret" });
    expect(cfg.providers[0]).toMatchObject({ base_url: "http://10.0.0.5:8000/v1", api_key: "sk-secret" });
  });

  it("refuses trust_proxy = true, which believed any caller's X-Forwarded-For", () => {
    expect(refusal({ server: { trust_proxy: true } })).toStartWith("gateway.toml: server.trust_proxy: list the proxies");
  });

  it("names the entry of trust_proxy that is not an address or CIDR", () => {
    expect(refusal({ server: { trust_proxy: ["127.0.0.1", "10.0.0.0/40"] } })).toBe("gateway.toml: server.trust_proxy[1]: bad prefix length in 10.0.0.0/40");
  });

  it("defaults to no trusted proxy, access log on, metrics on loopback, 30 s shutdown, 90-day retention", () => {
    const cfg = parseConfig({}, "gateway.toml");
    expect(cfg).toMatchObject({ host: "0.0.0.0", trustProxy: [], accessLog: true, metrics: { mode: "loopback" }, shutdownTimeoutMs: 30_000, logRetentionDays: 90 });
  });

  it("takes metrics = \"off\" and a bearer token", () => {
    expect(parseConfig({ server: { metrics: "off" } }, "g").metrics).toEqual({ mode: "off" });
    expect(parseConfig({ server: { metrics: "s3cret-token" } }, "g").metrics).toEqual({ mode: "token", token: "s3cret-token" });
  });

  it("names the missing environment variable and the field that uses it", () => {
    const raw = { providers: [{ id: "o", kind: "openai", base_url: "http://x", api_key: "${OPENAI_KEY}" }] };
    expect(refusal(raw)).toBe("gateway.toml: providers[0].api_key: environment variable OPENAI_KEY is not set");
  });
});

describe("gateway serve --config with a bad file", () => {
  const install = tempInstallation();
  afterAll(() => install.remove());
  const file = (name: string, text: string) => {
    const path = join(install.dir, name);
    writeFileSync(path, text);
    return path;
  };

  it("exits non-zero with one line naming server.port, and never listens", async () => {
    const path = file("port.toml", '[server]\nport = "eighty"\n');
    const r = await gateway(["serve", "--config", path, "--db", install.db]);
    expect(expectOneLineFailure(r)).toBe(`gateway: ${path}: server.port: Expected integer (got "eighty")`);
    expect(r.stdout).toBe("");
  });

  it("exits non-zero naming an unknown field", async () => {
    const path = file("unknown.toml", "[limits]\ndefault_rpm = 20\nburst = 5\n");
    const r = await gateway(["serve", "--config", path, "--db", install.db]);
    expect(expectOneLineFailure(r)).toContain("limits.burst: unknown field");
  });

  it("exits non-zero naming an unset environment variable", async () => {
    const path = file("env.toml", '[[providers]]\nid = "o"\nkind = "openai"\nbase_url = "http://x"\napi_key = "${GW_TEST_UNSET_KEY}"\n');
    const r = await gateway(["serve", "--config", path, "--db", install.db]);
    expect(expectOneLineFailure(r)).toContain("providers[0].api_key: environment variable GW_TEST_UNSET_KEY is not set");
  });

  it("exits non-zero on a file that is not TOML, naming the line and column", async () => {
    const path = file("broken.toml", '[server]\nport = 1\nhost = "x\n');
    const r = await gateway(["serve", "--config", path, "--db", install.db]);
    expect(expectOneLineFailure(r)).toStartWith(`gateway: ${path}: not valid TOML: line 3, column `);
  });

  it("exits non-zero on a file that does not exist", async () => {
    const r = await gateway(["serve", "--config", join(install.dir, "missing.toml"), "--db", install.db]);
    expect(expectOneLineFailure(r)).toContain("cannot read the config file");
  });

  it("uses ${ENV} from the environment of the process", async () => {
    const path = file("env-ok.toml", '[server]\ndatabase = "${GW_TEST_DIR}/from-env.db"\n');
    const r = await gateway(["migrate", "--config", path, "--json"], { env: { GW_TEST_DIR: install.dir } });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).database).toBe(join(install.dir, "from-env.db"));
  });
});

describe("capabilities", () => {
  const openai = { id: "o", kind: "openai", base_url: "http://x/v1" };
  const anthropic = { id: "a", kind: "anthropic", base_url: "http://x" };
  const routedTo = (provider: string, capabilities?: Record<string, unknown>) =>
    textModel({ routes: [{ provider, model: "up", ...(capabilities ? { capabilities } : {}) }] });
  const install = tempInstallation();
  afterAll(() => install.remove());

  it("refuses an unknown capability, naming its path", () => {
    const raw = { providers: [{ ...openai, capabilities: { reasoning: true, logprobs: true } }] };
    expect(refusal(raw)).toBe("gateway.toml: providers[0].capabilities.logprobs: unknown field (got true)");
  });

  it("refuses a capability of the wrong type", () => {
    const raw = { providers: [openai], models: [routedTo("o", { top_k: "yes" })] };
    expect(refusal(raw)).toBe('gateway.toml: models[0].routes[0].capabilities.top_k: Expected boolean (got "yes")');
  });

  it("lists the thinking modes when another is given", () => {
    const raw = { providers: [{ ...anthropic, capabilities: { thinking: "always" } }] };
    expect(refusal(raw)).toBe('gateway.toml: providers[0].capabilities.thinking: expected one of budget, adaptive, none (got "always")');
  });

  it("refuses a capability its provider's kind never reads", () => {
    expect(refusal({ providers: [{ ...anthropic, capabilities: { top_k: true } }] })).toBe(
      "gateway.toml: providers[0].capabilities.top_k: applies to providers of kind 'openai' only; 'a' is kind 'anthropic'",
    );
    const raw = { providers: [openai], models: [routedTo("o", { fixed_sampling: true })] };
    expect(refusal(raw)).toBe("gateway.toml: models[0].routes[0].capabilities.fixed_sampling: applies to providers of kind 'anthropic' only; 'o' is kind 'openai'");
  });

  it("takes prompt_cache on an anthropic provider, a route overriding it, and refuses it elsewhere", () => {
    const raw = { providers: [{ ...anthropic, capabilities: { prompt_cache: "auto" } }], models: [textModel({ routes: [{ provider: "a", model: "x" }, { provider: "a", model: "y", capabilities: { prompt_cache: "off" } }] })] };
    expect(buildCatalog(parseConfig(raw, "gateway.toml")).models[0]!.routes.map((r) => r.capabilities.promptCache)).toEqual(["auto", "off"]);
    expect(refusal({ providers: [{ ...openai, capabilities: { prompt_cache: "auto" } }] })).toBe(
      "gateway.toml: providers[0].capabilities.prompt_cache: applies to providers of kind 'anthropic' only; 'o' is kind 'openai'",
    );
  });

  it("resolves each route: its own over its provider's over the defaults", () => {
    const path = join(install.dir, "caps.toml");
    writeFileSync(
      path,
      [
        "[[providers]]", 'id = "o"', 'kind = "openai"', 'base_url = "http://x/v1"', "capabilities = { reasoning = true, top_k = true }",
        "[[models]]", 'id = "m1"', 'modalities = ["text"]', 'endpoints = ["messages"]', "pricing = { input = 1, output = 2 }",
        'routes = [{ provider = "o", model = "a" }, { provider = "o", model = "b", capabilities = { top_k = false, reasoning_content = true } }]',
      ].join("\n"),
    );
    const [first, second] = buildCatalog(loadConfig(path)).lookup("m1")!.routes;
    const defaults = { thinking: "budget", structuredOutputs: true, fixedSampling: false, promptCache: "off" } as const;
    expect(first!.capabilities).toEqual({ reasoning: true, reasoningContent: false, topK: true, ...defaults });
    expect(second!.capabilities).toEqual({ reasoning: true, reasoningContent: true, topK: false, ...defaults });
  });
});
