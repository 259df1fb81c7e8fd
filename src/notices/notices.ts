import type { Config } from "../config/load.ts";
import type { NotificationsConfig } from "../config/notices.ts";
import { events as processEvents, type EventLog } from "../core/events.ts";
import { formatUsd, nanoToUsd } from "../core/money.ts";
import type { AccountStore, ClosedAccount, Verified } from "../store/accounts/contract.ts";
import type { MoneyLedger } from "../store/ledger/contract.ts";
import { Deliveries } from "./deliveries.ts";
import { Mailer, type Mail } from "./mailer.ts";
import { newEvent, postEvent, type EventType } from "./webhook.ts";

// What the gateway tells people outside a request (docs/operations.md#email-and-notifications): the holder by
// email under [email] (the verification, reset and change-of-email links, low balance, a budget reached), the operator by signed
// webhook events under [notifications]. Everything is sent in the background: a mail server or a
// receiver that is down costs no request anything, and is the operator's event once retries give up.

/** A budget that refused a key's request (its owner emits it once per period reached). */
export interface BudgetReached {
  accountId: number;
  keyId: number;
  /** The key's visible prefix, when the caller knows it; the key's id names it otherwise. */
  keyPrefix?: string;
  budgetNano: number;
  /** "day", "week" or "month" (UTC). */
  period: string;
  /** When the budget resets (unix ms). */
  resetsAt: number;
}

const MAX_BUDGETS_REMEMBERED = 10_000;
/** Charges within this window are checked against the threshold once per account. */
const CHECK_DELAY_MS = 50;

export class Notices {
  readonly deliveries = new Deliveries();
  private readonly mailer: Mailer | null;
  private readonly hook: NotificationsConfig | null;
  private readonly site: string;
  private readonly toCheck = new Set<number>();
  private checkTimer: ReturnType<typeof setTimeout> | null = null;
  /** Budget notices sent, by key and reset: an emitter that repeats itself sends one notice. */
  private readonly budgetsSent = new Set<string>();

  constructor(
    config: Pick<Config, "email" | "notifications" | "publicUrl">,
    private readonly stores: { accounts: AccountStore; ledger: MoneyLedger },
    private readonly log: EventLog = processEvents,
  ) {
    this.mailer = config.email ? new Mailer(config.email) : null;
    this.hook = config.notifications;
    this.site = config.publicUrl.replace(/\/+$/, "");
  }

  /** Under [email], registrations wait for the address to be verified before the starting credit. */
  get verifiesEmail(): boolean {
    return this.mailer !== null;
  }

  private get on(): boolean {
    return this.mailer !== null || this.hook !== null;
  }

  /** Sends the verification link of a registration (or of a resend). */
  verificationLink(accountId: number, email: string, token: string, startingNano: number): void {
    const link = `${this.site}/verify?token=${encodeURIComponent(token)}`;
    const credit = startingNano > 0 ? ` Your starting credit of ${formatUsd(startingNano)} USD is granted when you do.` : "";
    this.email(accountId, "verification", {
      to: email,
      subject: "Verify your email address",
      text: `Open this link to verify the address of your gateway account:\n\n${link}\n\nThe link works once and expires in 24 hours.${credit}\nIf you did not register, ignore this email.\n`,
    });
  }

  // The links of docs/dashboard.md#password-reset and #change-of-email go to the dashboard with the
  // token in the fragment: a browser never sends it to the server in a request line, a Referer or an
  // access log; the page POSTs it.

  passwordResetLink(accountId: number, email: string, token: string): void {
    this.email(accountId, "password_reset", {
      to: email,
      subject: "Reset your gateway password",
      text: `Someone (we hope you) asked to reset the password of your gateway account. Open this link to choose a new one:\n\n${this.site}/#/reset?token=${encodeURIComponent(token)}\n\nThe link works once and expires in 1 hour. If you did not ask, ignore this email: your password stays as it is.\n`,
    });
  }

  /** `how`: with an emailed reset link, or on the account page (with the old password, by whoever held a session). */
  passwordChanged(accountId: number, email: string, how: "reset" | "account page" = "reset"): void {
    const done = how === "reset" ? "with a reset link, and every session of the account was logged out" : "on the account page, and every other session of the account was logged out";
    this.email(accountId, "password_changed", {
      to: email,
      subject: "Your gateway password was changed",
      text: `The password of your gateway account was changed ${done}.\n\nIf this was not you, reset it at ${this.site}/#/forgot and tell the gateway's operator.\n`,
    });
  }

  emailChangeLink(accountId: number, newEmail: string, token: string): void {
    this.email(accountId, "email_change", {
      to: newEmail,
      subject: "Confirm your new email address",
      text: `Open this link to make this the address of your gateway account:\n\n${this.site}/#/confirm-email?token=${encodeURIComponent(token)}\n\nThe link works once and expires in 24 hours. If you did not ask for this, ignore this email.\n`,
    });
  }

  /**
   * The account's address changed: the operator hears of it, as of the address every other account
   * event carries (a receiver that keeps them would otherwise go on naming the old one).
   */
  addressChanged(accountId: number, oldEmail: string, newEmail: string): void {
    this.event("account.email_changed", { account_id: accountId, email: newEmail, previous_email: oldEmail });
  }

  /** Told to the address the account had, when it was verified (an unverified one may be someone else's). */
  emailChanged(accountId: number, oldEmail: string, newEmail: string): void {
    this.email(accountId, "email_changed", {
      to: oldEmail,
      subject: "Your gateway account's email address was changed",
      text: `The address of your gateway account was changed from ${oldEmail} to ${newEmail}; this address receives nothing from it any more.\n\nIf this was not you, tell the gateway's operator at once.\n`,
    });
  }

  registered(accountId: number, email: string, creditedNano: number, verificationPending: boolean): void {
    this.event("account.registered", { account_id: accountId, email, starting_credit_usd: nanoToUsd(creditedNano), verification_pending: verificationPending });
  }

  verified(v: Verified): void {
    this.event("account.verified", { account_id: v.accountId, email: v.email, starting_credit_usd: nanoToUsd(v.creditedNano) });
  }

  /** Money added to an account: a Stripe top-up or the operator's credit. Re-arms the low-balance notice. */
  credited(accountId: number, amountNano: number, kind: "top_up" | "operator_credit", reference: string | null = null): void {
    this.event("topup.credited", { account_id: accountId, kind, amount_usd: nanoToUsd(amountNano), reference });
    this.balanceChanged(accountId);
  }

  /**
   * The holder closed the account: the operator hears of it (with the address the row no longer
   * keeps), and the holder gets a confirmation at that address, so a closure they did not make is seen.
   */
  closed(c: ClosedAccount): void {
    this.event("account.closed", { account_id: c.accountId, email: c.email, forfeited_usd: nanoToUsd(c.forfeitedNano) });
    const forfeit = c.forfeitedNano > 0 ? ` Its remaining balance of ${formatUsd(c.forfeitedNano)} USD was forfeited, as you confirmed.` : "";
    this.email(c.accountId, "account.closed", {
      to: c.email,
      subject: "Your gateway account is closed",
      text: `Your gateway account (number ${c.accountId}) was closed at your request: its keys are revoked and you can no longer log in.${forfeit}\nIf you did not close it, reply to the operator at once.\n\n${this.site}/\n`,
    });
  }

  /**
   * A card top-up's receipt, mailed to the holder under [email] once it is credited; `load` reads it
   * off the request (the books), and the send is tracked so that a drain waits for it.
   */
  receipt(accountId: number, load: () => Promise<Omit<Mail, "to"> | null>): void {
    if (!this.mailer) return;
    this.deliveries.track(
      this.emailAccount(accountId, "topup.receipt", async (to) => {
        const mail = await load();
        return mail && { ...mail, to };
      }).catch((e) => this.log.noticeFailed({ channel: "email", type: "topup.receipt", accountId, attempts: 0, reason: (e as Error).message })),
    );
  }

  /** A charge was posted: the balance is compared with the holder's threshold shortly after, off the request. */
  charged(accountId: number): void {
    if (this.on) this.balanceChanged(accountId);
  }

  budgetReached(b: BudgetReached): void {
    if (!this.on) return;
    const sent = `${b.keyId}:${b.resetsAt}`;
    if (this.budgetsSent.has(sent)) return;
    if (this.budgetsSent.size >= MAX_BUDGETS_REMEMBERED) this.budgetsSent.clear();
    this.budgetsSent.add(sent);
    const resets = new Date(b.resetsAt).toISOString();
    const named = b.keyPrefix ? `${b.keyPrefix}…` : `#${b.keyId}`;
    this.event("budget.reached", { account_id: b.accountId, key_id: b.keyId, key_prefix: b.keyPrefix ?? null, budget_usd: nanoToUsd(b.budgetNano), period: b.period, resets_at: resets });
    this.deliveries.track(this.emailAccount(b.accountId, "budget.reached", (email) => ({
      to: email,
      subject: `Key ${named} reached its budget`,
      text: `The key ${named} reached its ${b.period} budget of ${formatUsd(b.budgetNano)} USD. It is refused until the budget resets at ${resets}.\n\n${this.site}/\n`,
    })).catch((e) => this.log.noticeFailed({ channel: "email", type: "budget.reached", accountId: b.accountId, attempts: 0, reason: (e as Error).message })));
  }

  /** A recovery code opened a login or turned two-factor login off: the holder hears of it, in case it was not them. */
  recoveryCodeUsed(accountId: number, left: number): void {
    this.deliveries.track(this.emailAccount(accountId, "recovery_code.used", (email) => ({
      to: email,
      subject: "A recovery code of your gateway account was used",
      text: `One of the two-factor recovery codes of your gateway account was just used; ${left} unused ${left === 1 ? "code remains" : "codes remain"}. Each works once.\n\nIf this was not you, someone has your password and a recovery code: change the password and turn two-factor login off and on again at ${this.site}/ for new codes.\n`,
    })).catch((e) => this.log.noticeFailed({ channel: "email", type: "recovery_code.used", accountId, attempts: 0, reason: (e as Error).message })));
  }

  /**
   * Two-factor login turned on or off (by the holder, or removed by the operator): the account's
   * current address hears of it, as of a changed password. Turned on by someone holding the password
   * and a session, it would lock the holder out; turned off, the account is back to the password alone.
   */
  twoFactorChanged(accountId: number, change: "enabled" | "disabled" | "reset"): void {
    const what = { enabled: "turned on: each login now asks for a code from the authenticator app", disabled: "turned off: a login asks for the password only", reset: "removed by the gateway's operator: a login asks for the password only" }[change];
    this.deliveries.track(this.emailAccount(accountId, `two_factor_${change}`, (email) => ({
      to: email,
      subject: `Two-factor login of your gateway account was ${change === "enabled" ? "turned on" : "turned off"}`,
      text: `Two-factor login of your gateway account was ${what}.\n\nIf this was not you, reset your password at ${this.site}/#/login and tell the gateway's operator.\n`,
    })).catch((e) => this.log.noticeFailed({ channel: "email", type: `two_factor_${change}`, accountId, attempts: 0, reason: (e as Error).message })));
  }

  /** Waits for what is being sent, at most `timeoutMs`; balance checks queued are run first. */
  async drain(timeoutMs: number): Promise<void> {
    if (this.checkTimer) {
      clearTimeout(this.checkTimer);
      this.deliveries.track(this.runChecks());
    }
    await this.deliveries.drain(timeoutMs);
  }

  close(): void {
    this.mailer?.close();
  }

  private balanceChanged(accountId: number): void {
    if (!this.on) return;
    this.toCheck.add(accountId);
    this.checkTimer ??= setTimeout(() => this.deliveries.track(this.runChecks()), CHECK_DELAY_MS);
  }

  private async runChecks(): Promise<void> {
    this.checkTimer = null;
    const ids = [...this.toCheck];
    this.toCheck.clear();
    for (const id of ids) {
      try {
        await this.checkBalance(id);
      } catch (e) {
        this.log.noticeFailed({ channel: this.mailer ? "email" : "webhook", type: "balance.low", accountId: id, attempts: 0, reason: `the balance check failed: ${(e as Error).message}` });
      }
    }
  }

  /**
   * The low-balance notice: sent when the settled balance is below the holder's threshold and none
   * was sent since it was last at or above it (holds of running requests are not counted: they come
   * and go with each request, and would send a notice per request near the threshold).
   */
  private async checkBalance(accountId: number): Promise<void> {
    const { accounts, ledger } = this.stores;
    const profile = await accounts.profileOf(accountId);
    if (!profile) return;
    const threshold = profile.lowBalanceNano;
    const balance = (await ledger.balance(accountId)).balanceNano;
    const below = threshold !== null && balance < threshold;
    if (below === (profile.lowBalanceNotifiedAt !== null)) return;
    // The conditional write decides which instance (or which of two checks) sends it.
    if (!(await accounts.markLowBalanceNotice(accountId, below, Date.now())) || !below) return;
    this.event("balance.low", { account_id: accountId, email: profile.email, balance_usd: nanoToUsd(balance), threshold_usd: nanoToUsd(threshold!) });
    await this.emailAccount(accountId, "balance.low", (email) => ({
      to: email,
      subject: "Your gateway balance is low",
      text: `Your balance is ${formatUsd(balance)} USD, below the ${formatUsd(threshold!)} USD you asked to be told about. Requests are refused once it runs out.\n\nTop up: ${this.site}/\n`,
    }));
  }

  /** Emails the account's address, unless it is still waiting to be verified (it may be someone else's). */
  private async emailAccount(accountId: number, type: string, mail: (email: string) => Mail | null | Promise<Mail | null>): Promise<void> {
    if (!this.mailer) return;
    const { accounts } = this.stores;
    const [profile, verification] = await Promise.all([accounts.profileOf(accountId), accounts.verificationOf(accountId)]);
    // A closed account's row keeps no address to write to.
    if (!profile || profile.closedAt !== null || (verification && !verification.verified)) return;
    const made = await mail(profile.email);
    if (made) this.email(accountId, type, made);
  }

  private email(accountId: number, type: string, mail: Mail): void {
    const mailer = this.mailer;
    if (!mailer) return;
    this.deliveries.start(
      () => mailer.send(mail),
      (g) => this.log.noticeFailed({ channel: "email", type, accountId, ...g }),
    );
  }

  private event(type: EventType, data: Record<string, unknown>): void {
    const hook = this.hook;
    if (!hook) return;
    const event = newEvent(type, data);
    const accountId = typeof data.account_id === "number" ? data.account_id : null;
    this.deliveries.start(
      () => postEvent(hook, event),
      (g) => this.log.noticeFailed({ channel: "webhook", type, accountId, ...g }),
    );
  }
}
