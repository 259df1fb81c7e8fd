import { describe, expect, it } from "bun:test";
import { ConfigError, parseConfig } from "../../src/config/load.ts";

// Several keys per provider and weighted routes (docs/operations.md#several-keys-and-weighted-routes):
// a wrong spelling stops the load on one line naming the field.

const provider = (over: Record<string, unknown>) => ({ id: "p", kind: "anthropic", base_url: "http://127.0.0.1:1", ...over });
const model = (routes: unknown[]) => ({ id: "m", modalities: ["text"], endpoints: ["messages"], pricing: { input: 1, output: 2 }, routes });

function refusal(raw: unknown, env: Record<string, string> = {}): string {
  try {
    parseConfig(raw, "gateway.toml", env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    expect((e as Error).message).not.toContain("\n");
    return (e as Error).message;
  }
  throw new Error("the config was accepted");
}

describe("api_keys", () => {
  it("reads a list of keys, each interpolated from the environment", () => {
    const cfg = parseConfig({ providers: [provider({ api_keys: ["${K1}", "${K2}"] })], models: [model([{ provider: "p", model: "u" }])] }, "gateway.toml", {
      K1: "sk-one-1111",
      K2: "sk-two-2222",
    });
    expect(cfg.providers[0]!.api_keys).toEqual(["sk-one-1111", "sk-two-2222"]);
  });

  it("refuses an empty list", () => {
    expect(refusal({ providers: [provider({ api_keys: [] })], models: [model([{ provider: "p", model: "u" }])] })).toBe(
      "gateway.toml: providers[0].api_keys: empty: list at least one key, or use api_key",
    );
  });

  it("refuses api_key and api_keys together", () => {
    expect(refusal({ providers: [provider({ api_key: "sk-a", api_keys: ["sk-b"] })], models: [model([{ provider: "p", model: "u" }])] })).toBe(
      "gateway.toml: providers[0].api_keys: give either api_key or api_keys, not both",
    );
  });

  it("refuses an empty key in the list", () => {
    expect(refusal({ providers: [provider({ api_keys: ["sk-a", " "] })], models: [model([{ provider: "p", model: "u" }])] })).toBe(
      "gateway.toml: providers[0].api_keys[1]: empty key",
    );
  });
});

describe("route weight", () => {
  it("refuses a weight of 0", () => {
    expect(refusal({ providers: [provider({})], models: [model([{ provider: "p", model: "u", weight: 0 }])] })).toStartWith(
      "gateway.toml: models[0].routes[0].weight: ",
    );
  });

  it("refuses a negative weight", () => {
    expect(refusal({ providers: [provider({})], models: [model([{ provider: "p", model: "u", weight: -2 }])] })).toStartWith(
      "gateway.toml: models[0].routes[0].weight: ",
    );
  });

  it("refuses a weight that is not an integer", () => {
    expect(refusal({ providers: [provider({})], models: [model([{ provider: "p", model: "u", weight: 1.5 }])] })).toBe(
      "gateway.toml: models[0].routes[0].weight: Expected integer (got 1.5)",
    );
  });
});
