import type { Transporter } from "nodemailer";
import type { EmailConfig } from "../config/notices.ts";

// Email over SMTP (`[email]`, docs/operations.md#email-and-notifications), through nodemailer
// (docs/decisions.md): smtp:// upgrades with STARTTLS when the server offers it, smtps:// is TLS from
// the first byte. Loaded at the first send: its ~100 ms of loading is not paid by every start and
// every CLI command, most of which send nothing.

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

export class Mailer {
  private transport: Promise<Transporter> | null = null;

  constructor(private readonly config: EmailConfig) {}

  async send(mail: Mail): Promise<void> {
    const transport = await this.open();
    await transport.sendMail({ from: this.config.from, to: mail.to, subject: mail.subject, text: mail.text });
  }

  close(): void {
    void this.transport?.then((t) => t.close(), () => {});
  }

  private open(): Promise<Transporter> {
    // Timeouts short enough that a dead server fails an attempt, not minutes of each.
    const options = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 20_000 };
    return (this.transport ??= import("nodemailer").then((m) => m.default.createTransport(this.config.smtpUrl, options as never)));
  }
}
