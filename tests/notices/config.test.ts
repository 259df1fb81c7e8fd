import { describe, expect, test } from "bun:test";
import { ConfigError, parseConfig } from "../../src/config/load.ts";

// `[email]` and `[notifications]` checked at load (docs/operations.md#email-and-notifications).

const load = (raw: Record<string, unknown>) => parseConfig(raw, "gw.toml", {});
const refusal = (raw: Record<string, unknown>) => {
  try {
    load(raw);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error("loaded");
};
const site = { server: { public_url: "https://gw.example" } };

describe("[email]", () => {
  test("is read with its SMTP URL and sender", () => {
    const c = load({ ...site, email: { smtp_url: "smtps://u:p@mail.example:465", from: "Gateway <gw@example.com>" } });
    expect(c.email).toEqual({ smtpUrl: "smtps://u:p@mail.example:465", from: "Gateway <gw@example.com>" });
    expect(load({}).email).toBeNull();
  });

  test("refuses a URL of another scheme without quoting its password", () => {
    const m = refusal({ ...site, email: { smtp_url: "http://u:hunter22@mail.example", from: "gw@example.com" } });
    expect(m).toContain("email.smtp_url");
    expect(m).not.toContain("hunter22");
  });

  test("needs server.public_url, where the verification links point", () => {
    expect(refusal({ email: { smtp_url: "smtp://mail.example:587", from: "gw@example.com" } })).toContain("public_url");
  });
});

describe("[notifications]", () => {
  test("needs an http(s) URL and a secret of at least 16 characters", () => {
    expect(load({ notifications: { webhook_url: "https://ops.example/e", webhook_secret: "0123456789abcdef" } }).notifications).toEqual({ webhookUrl: "https://ops.example/e", webhookSecret: "0123456789abcdef" });
    expect(refusal({ notifications: { webhook_url: "ftp://ops.example/e", webhook_secret: "0123456789abcdef" } })).toContain("notifications.webhook_url");
    expect(refusal({ notifications: { webhook_url: "https://ops.example/e", webhook_secret: "short" } })).toContain("notifications.webhook_secret");
  });
});
