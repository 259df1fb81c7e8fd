import { ConfigError } from "./error.ts";
import type { ConfigFile } from "./schema.ts";

// `[email]` and `[notifications]` (docs/operations.md#email-and-notifications), checked at load so that a
// mistyped URL stops the start instead of failing every notice later. Refusals never quote the URL:
// it carries the SMTP password.

export interface EmailConfig {
  /** smtp:// or smtps://, with the credentials in it; never logged. */
  smtpUrl: string;
  from: string;
}

export interface NotificationsConfig {
  webhookUrl: string;
  webhookSecret: string;
}

export function emailConfig(e: ConfigFile["email"], publicUrl: string | undefined, source: string): EmailConfig | null {
  if (!e) return null;
  let url: URL | null = null;
  try {
    url = new URL(e.smtp_url);
  } catch {}
  if (!url || (url.protocol !== "smtp:" && url.protocol !== "smtps:") || !url.hostname) {
    throw new ConfigError(`${source}: email.smtp_url: expected smtp://user:password@host:587 or smtps://user:password@host:465${url ? ` (got a ${url.protocol} URL)` : ""}`);
  }
  // The verification link is built from it: a link from the request's Host header could point anywhere.
  if (!publicUrl) throw new ConfigError(`${source}: email: needs server.public_url, the address the verification links point to`);
  if (!/@/.test(e.from)) throw new ConfigError(`${source}: email.from: expected an address such as "Gateway <gateway@example.com>"`);
  return { smtpUrl: e.smtp_url, from: e.from };
}

export function notificationsConfig(n: ConfigFile["notifications"], source: string): NotificationsConfig | null {
  if (!n) return null;
  let url: URL | null = null;
  try {
    url = new URL(n.webhook_url);
  } catch {}
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
    throw new ConfigError(`${source}: notifications.webhook_url: not an http(s) URL`);
  }
  return { webhookUrl: n.webhook_url, webhookSecret: n.webhook_secret };
}
