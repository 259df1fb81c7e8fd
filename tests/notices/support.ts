import { events } from "../../src/core/events.ts";
import { Browser, dashboardGateway } from "../api/support.ts";
import type { TestGateway } from "../support/gateway.ts";
import { startSmtpServer, type ReceivedMail, type SmtpServer } from "../support/smtp-server.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.ts";

// A gateway with [email] on a loopback SMTP server and [notifications] on a loopback receiver, its
// retries shortened. Its public_url is a site of its own, so that the links it emails are checked
// for the right origin; SiteBrowser sends that origin, as the page opened there would.

export const SITE = "https://gateway.test";

export class SiteBrowser extends Browser {
  override call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
    return super.call(method, path, body, { origin: SITE, ...headers });
  }
}

export interface NoticeRig {
  gw: TestGateway;
  smtp: SmtpServer;
  hook: WebhookReceiver;
  browser(): SiteBrowser;
  stop(): Promise<void>;
}

export async function noticeGateway(opts: { smtpUrl?: string; config?: Record<string, unknown> } = {}): Promise<NoticeRig> {
  const smtp = startSmtpServer({ password: "smtp-pass-1" });
  const hook = startWebhookReceiver();
  const gw = await dashboardGateway({
    server: { public_url: SITE },
    email: { smtp_url: opts.smtpUrl ?? smtp.url("gw", "smtp-pass-1"), from: "Gateway <gateway@test.local>" },
    ...hook.config(),
    limits: { default_rpm: 1000 },
    ...opts.config,
  });
  gw.services.notices.deliveries.retryDelaysMs = [20, 40];
  return {
    gw,
    smtp,
    hook,
    browser: () => new SiteBrowser(gw.url),
    async stop() {
      await gw.stop();
      smtp.stop();
      hook.stop();
    },
  };
}

/** The token of the verification link in a mail, with the link itself. */
export function linkIn(text: string): { link: string; token: string } {
  const m = /(https:\/\/gateway\.test\/verify\?token=([A-Za-z0-9_%-]+))/.exec(text);
  if (!m) throw new Error(`no verification link in: ${text}`);
  return { link: m[1]!, token: decodeURIComponent(m[2]!) };
}

/** The token of a dashboard link in a mail (#/reset, #/confirm-email): it rides in the fragment, never the path or query. */
export function fragmentTokenIn(text: string, route: "reset" | "confirm-email"): string {
  const m = new RegExp(`https://gateway\\.test/#/${route}\\?token=([A-Za-z0-9_%-]+)`).exec(text);
  if (!m) throw new Error(`no #/${route} link in: ${text}`);
  return decodeURIComponent(m[1]!);
}

/** A holder registered under [email] whose address is verified through its emailed link, logged in. */
export async function verifiedHolder(rig: NoticeRig): Promise<{ b: SiteBrowser; id: number; email: string; password: string }> {
  const b = rig.browser();
  const before = rig.smtp.mails.length;
  const { email, password, res } = await b.register();
  const id = ((await res.json()) as { id: number }).id;
  const { token } = linkIn((await mailTo(rig, email, before)).text);
  const verified = await rig.browser().call("POST", "/api/verify", { token });
  if (verified.status !== 200) throw new Error(`verification refused: ${verified.status}`);
  return { b, id, email, password };
}

/** The mails sent to `to` since the `from`-th. */
export const mailsTo = (rig: NoticeRig, to: string, from = 0) => rig.smtp.mails.slice(from).filter((m) => m.to.includes(to));

/** The first mail to `to` since the `from`-th, waited for (mails of other tests may arrive between). */
export async function mailTo(rig: NoticeRig, to: string, from = 0, timeoutMs = 10_000): Promise<ReceivedMail> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const [mail] = mailsTo(rig, to, from);
    if (mail) return mail;
    if (Date.now() > until) throw new Error(`no mail to ${to} within ${timeoutMs} ms`);
    await Bun.sleep(10);
  }
}

/** The operator's event lines written while `body` runs. */
export async function eventLines(body: (lines: string[]) => Promise<void>): Promise<string[]> {
  const lines: string[] = [];
  const restore = events.redirect((l) => lines.push(l));
  try {
    await body(lines);
  } finally {
    restore();
  }
  return lines;
}
