import nodemailer, { type Transporter } from "nodemailer";
import type { EmailConfig } from "../config/notices.ts";

// Email over SMTP (`[email]`, docs/operations.md#email), through nodemailer (docs/decisions.md):
// smtp:// upgrades with STARTTLS when the server offers it, smtps:// is TLS from the first byte.

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

export class Mailer {
  private readonly transport: Transporter;
  private readonly from: string;

  constructor(config: EmailConfig) {
    // Timeouts short enough that a dead server fails an attempt, not a minute of each.
    this.transport = nodemailer.createTransport(config.smtpUrl, { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 20_000 } as never);
    this.from = config.from;
  }

  async send(mail: Mail): Promise<void> {
    await this.transport.sendMail({ from: this.from, to: mail.to, subject: mail.subject, text: mail.text });
  }

  close(): void {
    this.transport.close();
  }
}
