import { describe, expect, it } from "bun:test";
import { ConfigError, parseConfig } from "../../src/config/load.ts";
import { topUpNano } from "../../src/payments/topups.ts";
import { GatewayError } from "../../src/core/errors.ts";

// DESIGN, Dashboard and /api/: `[payments.stripe]` (secret key, webhook secret, an API base that
// tests point at a loopback mock); spec, Limits: a top-up starts from 1 USD, in whole cents.

function refusal(raw: unknown): string {
  try {
    parseConfig(raw, "gateway.toml", { STRIPE_SECRET_KEY: "sk_test_fromenv123", STRIPE_WEBHOOK_SECRET: "whsec_fromenv123" });
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error("the config was accepted");
}

const stripe = (over: Record<string, unknown> = {}) => ({ payments: { stripe: { secret_key: "sk_test_x1234567", webhook_secret: "whsec_x1234567", ...over } } });

describe("[payments.stripe]", () => {
  it("is off when absent", () => {
    expect(parseConfig({}, "t").stripe).toBeNull();
  });

  it("reads the keys from the environment and Stripe's API as the default base", () => {
    const cfg = parseConfig({ payments: { stripe: { secret_key: "${STRIPE_SECRET_KEY}", webhook_secret: "${STRIPE_WEBHOOK_SECRET}" } } }, "t", {
      STRIPE_SECRET_KEY: "sk_test_fromenv123",
      STRIPE_WEBHOOK_SECRET: "whsec_fromenv123",
    });
    expect(cfg.stripe).toEqual({ secretKey: "sk_test_fromenv123", webhookSecret: "whsec_fromenv123", apiBase: new URL("https://api.stripe.com") });
  });

  it("takes an api_base on loopback", () => {
    expect(parseConfig(stripe({ api_base: "http://127.0.0.1:12111" }), "t").stripe!.apiBase.href).toBe("http://127.0.0.1:12111/");
  });

  it("names payments.stripe.api_base when it is not an http(s) origin", () => {
    expect(refusal(stripe({ api_base: "ftp://stripe" }))).toBe('gateway.toml: payments.stripe.api_base: not an http(s) origin such as https://api.stripe.com (got "ftp://stripe")');
    expect(refusal(stripe({ api_base: "https://api.stripe.com/v1" }))).toStartWith("gateway.toml: payments.stripe.api_base: not an http(s) origin");
  });

  it("names the missing webhook secret", () => {
    expect(refusal({ payments: { stripe: { secret_key: "sk_test_x1234567" } } })).toBe("gateway.toml: payments.stripe.webhook_secret: required field is missing");
  });

  it("names an unknown field", () => {
    expect(refusal(stripe({ publishable_key: "pk_test_1" }))).toBe('gateway.toml: payments.stripe.publishable_key: unknown field (got "pk_test_1")');
  });
});

describe("a top-up's amount", () => {
  const refused = (usd: number) => {
    try {
      topUpNano(usd);
    } catch (e) {
      expect(e).toBeInstanceOf(GatewayError);
      return (e as GatewayError).message;
    }
    throw new Error(`${usd} was accepted`);
  };

  it("is exact nano-dollars from 1 USD, in whole cents", () => {
    expect(topUpNano(1)).toBe(1_000_000_000);
    expect(topUpNano(12.34)).toBe(12_340_000_000);
    expect(topUpNano(999_999.99)).toBe(999_999_990_000_000);
  });

  it("is refused below 1 USD, zero and negative included", () => {
    for (const usd of [0.99, 0, -5]) expect(refused(usd)).toStartWith("amount_usd: the minimum top-up is 1 USD");
  });

  it("is refused with fractions of a cent, float noise included", () => {
    for (const usd of [1.001, 1.1 + 2.2, 2.345, 1e21]) expect(refused(usd)).toStartWith("amount_usd: must be a whole number of cents");
  });
});
