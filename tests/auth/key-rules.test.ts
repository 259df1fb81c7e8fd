import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { keyRules, KeyRuleError, type KeyRulesInput } from "../../src/auth/key-rules.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";

// The one implementation of the key rules, shared by key create and key update (CLI and dashboard).

const NOW = Date.parse("2026-06-01T00:00:00Z");
const catalog: Record<string, string> = { "model-a": "model-a", "a-latest": "model-a", "model-b": "model-b" };
const rules = (input: KeyRulesInput) => keyRules(input, { resolveModel: (n) => catalog[n], now: NOW });
const refusal = (input: KeyRulesInput): { field: string; message: string } => {
  try {
    rules(input);
  } catch (e) {
    if (e instanceof KeyRuleError) return { field: e.field, message: e.message };
    throw e;
  }
  throw new Error("not refused");
};

describe("keyRules", () => {
  it("turns typed restrictions into stored ones: USD to nano, aliases to canonical ids, ISO to ms", () => {
    expect(rules({ quota: "0.5", models: ["a-latest", "model-b", "model-a"], ip: [" 10.0.0.0/8 "], rpm: "30", expires: "2027-01-01T00:00:00Z" })).toEqual({
      quotaNano: 500_000_000,
      models: ["model-a", "model-b"],
      ipAllow: ["10.0.0.0/8"],
      rpm: 30,
      expiresAt: Date.parse("2027-01-01T00:00:00Z"),
    });
  });

  it("leaves out what was not given, and turns null into no restriction", () => {
    expect(rules({ models: null, ip: null })).toEqual({ models: null, ipAllow: null });
    expect(rules({})).toEqual({});
  });

  it("refuses each bad field by its name", () => {
    expect(refusal({ models: [] }).field).toBe("models");
    expect(refusal({ models: ["gpt-9"] })).toEqual({ field: "models", message: "no model 'gpt-9' in this installation's catalog" });
    expect(refusal({ ip: [""] }).field).toBe("ip");
    expect(refusal({ ip: ["300.1.1.1"] }).field).toBe("ip");
    expect(refusal({ quota: -1 }).field).toBe("quota");
    expect(refusal({ quota: "1.0000000001" }).field).toBe("quota");
    expect(refusal({ rpm: 0 }).field).toBe("rpm");
    expect(refusal({ rpm: "1.5" }).field).toBe("rpm");
    expect(refusal({ expires: "2026-05-31T23:59:59Z" }).message).toContain("in the past");
    expect(refusal({ expires: "tomorrow" }).field).toBe("expires");
  });
});

describe("Keys.update in the serving process", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(() => gw.stop());

  it("replaces the copy of the key the process holds", async () => {
    const a = await gw.account(1, { rpm: 5 });
    expect(gw.services.keys.lookup(a.key)?.rpm).toBe(5);
    expect(await gw.services.keys.update(a.keyId, { rpm: 9, models: ["demo-text-1"] })).toBe(true);
    expect(gw.services.keys.lookup(a.key)).toMatchObject({ rpm: 9, models: ["demo-text-1"] });
  });

  it("answers false for an id that names no key", async () => {
    expect(await gw.services.keys.update(987654, { rpm: 9 })).toBe(false);
  });
});
