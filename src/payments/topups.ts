import { GatewayError } from "../core/errors.ts";
import { formatUsd, NANO_PER_USD } from "../core/money.ts";
import { events } from "../core/events.ts";
import { creditedAlready, type CheckoutSession, type CheckoutStore, type TopUpCredit, type TopUpReceipt } from "../store/checkouts/contract.ts";
import type { StripeCheckout } from "./stripe-checkout.ts";
import type { PaidSession } from "./stripe-event.ts";

// Top-ups (docs/dashboard.md, Top-ups): a Checkout Session opened for the amount the holder asked,
// and the balance credited only from Stripe's signed word that it was paid. The browser's return
// credits nothing; the webhook may come before it, twice, or twice at once.

/** A top-up starts from 1 USD (docs/api.md#limits). */
export const MINIMUM_TOP_UP_NANO = 1_000_000_000;
const NANO_PER_CENT = 10_000_000;
/** Stripe's ceiling for one charge in USD, 999 999.99. */
const MAXIMUM_TOP_UP_NANO = 99_999_999 * NANO_PER_CENT;

/** The events that say a Checkout Session is paid: at once by card, later by a delayed method (a bank debit). */
const PAID_EVENTS = new Set(["checkout.session.completed", "checkout.session.async_payment_succeeded"]);

export type WebhookOutcome = { credited: true; session: string } | { credited: false; session: string | null; ignored: string };

export const notConfigured = () =>
  new GatewayError(
    "payments_not_configured",
    "Top-ups by card are not set up on this gateway: the operator credits balances, or a code can be redeemed on the top-up page. Ask them for credit.",
  );

/** The nano-dollars of a top-up of `usd`: at least 1 USD, whole cents, within Stripe's ceiling. */
export function topUpNano(usd: number): number {
  if (!(usd >= MINIMUM_TOP_UP_NANO / NANO_PER_USD)) throw new GatewayError("invalid_request", `amount_usd: the minimum top-up is 1 USD (got ${usd}).`);
  // The decimal the client wrote: JavaScript prints a number as the shortest decimal that reads back
  // as it, so 12.5 is "12.5" and 1.1 + 2.2 is "3.3000000000000003", not a whole number of cents.
  const m = /^(\d+)(?:\.(\d{1,2}))?$/.exec(String(usd));
  if (!m) throw new GatewayError("invalid_request", `amount_usd: must be a whole number of cents, such as 5 or 12.50 (got ${usd}).`);
  const cents = Number(m[1]) * 100 + Number((m[2] ?? "").padEnd(2, "0"));
  if (cents * NANO_PER_CENT > MAXIMUM_TOP_UP_NANO) throw new GatewayError("invalid_request", `amount_usd: the largest top-up Stripe takes is 999999.99 USD (got ${usd}).`);
  return cents * NANO_PER_CENT;
}

export class Payments {
  constructor(
    private readonly checkouts: CheckoutStore,
    private readonly credits: TopUpCredit,
    /** Null without [payments.stripe]: every top-up is the operator's. */
    private readonly stripe: StripeCheckout | null,
    /** Told of each session credited (the operator's webhook, the low-balance notice re-armed). */
    private readonly onCredited: (row: CheckoutSession) => void = () => {},
  ) {}

  get enabled(): boolean {
    return this.stripe !== null;
  }

  /**
   * Opens a Checkout Session for the account and remembers it with its amount: the webhook credits
   * what is stored here, never what an event says. `returnTo` is the dashboard's origin.
   */
  async start(o: { accountId: number; email: string; amountUsd: number; returnTo: string; requestId: string }): Promise<{ id: string; url: string; amountNano: number }> {
    if (!this.stripe) throw notConfigured();
    const amountNano = topUpNano(o.amountUsd);
    const opened = await this.stripe.open({
      cents: amountNano / NANO_PER_CENT,
      accountId: o.accountId,
      email: o.email,
      successUrl: `${o.returnTo}/#/topup?session_id={CHECKOUT_SESSION_ID}`,
      cancelUrl: `${o.returnTo}/#/topup?cancelled=1`,
      // One session per request, however often the package retries it.
      idempotencyKey: o.requestId,
    });
    await this.checkouts.record(opened.id, o.accountId, amountNano);
    return { ...opened, amountNano };
  }

  /** The account's checkout sessions, newest first. */
  async list(accountId: number): Promise<CheckoutSession[]> {
    return this.checkouts.of(accountId);
  }

  /** A credited session's receipt (docs/dashboard.md#receipts); null for any other id. */
  receipt(id: string): Promise<TopUpReceipt | null> {
    return this.checkouts.receiptOf(id);
  }

  /**
   * A webhook's delivery: verified first (400 invalid_signature, nothing read), then credited at most
   * once per session. Events that credit nothing (another type, a session this gateway did not open,
   * one not paid yet, one credited already) are acknowledged, so Stripe stops sending them.
   */
  async webhook(payload: Uint8Array, signature: string | null): Promise<WebhookOutcome> {
    if (!this.stripe) throw notConfigured();
    const event = await this.stripe.verify(payload, signature);
    const paid = event.session;
    if (!PAID_EVENTS.has(event.type) || !paid) return { credited: false, session: paid?.id ?? null, ignored: `${event.type} credits nothing` };
    const row = await this.checkouts.find(paid.id);
    if (!row) return { credited: false, session: paid.id, ignored: "not a Checkout Session of this gateway" };
    if (row.status === "credited") return { credited: false, session: row.id, ignored: creditedAlready };
    if (paid.paymentStatus !== "paid") return { credited: false, session: row.id, ignored: `payment_status is ${paid.paymentStatus}; credited once Stripe reports it paid` };
    const mismatch = mismatchOf(row, paid);
    if (mismatch) {
      events.paymentNotCredited({ session: row.id, event: event.id, accountId: row.accountId, reason: mismatch });
      throw new GatewayError("payment_mismatch", `Checkout Session ${row.id} was not credited: ${mismatch}.`);
    }
    let why: string | null;
    try {
      why = await this.credits.credit(row, paid.paymentRef);
    } catch (e) {
      // Paid but refused by the ledger (the balance's ceiling): the answer makes Stripe retry, the operator must hear why.
      if (e instanceof GatewayError && e.code === "invalid_request") events.paymentNotCredited({ session: row.id, event: event.id, accountId: row.accountId, reason: e.message });
      throw e;
    }
    if (why === null) this.onCredited(row);
    return why === null ? { credited: true, session: row.id } : { credited: false, session: row.id, ignored: why };
  }
}

/** Why a paid session is not the one the gateway opened, or null when it is. */
function mismatchOf(row: CheckoutSession, paid: PaidSession): string | null {
  const cents = row.amountNano / NANO_PER_CENT;
  if (paid.currency !== "usd") return `paid in ${paid.currency ?? "no currency"}, not usd`;
  if (paid.amountTotal !== cents) return `paid ${paid.amountTotal ?? "no"} cents where ${cents} cents (${formatUsd(row.amountNano)} USD) were asked`;
  return null;
}
