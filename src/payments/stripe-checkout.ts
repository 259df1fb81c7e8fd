import Stripe from "stripe";
import type { StripeConfig } from "../config/load.ts";
import { GatewayError } from "../core/errors.ts";
import { redactSecrets, rememberSecretValues } from "../wire/scrub.ts";

// The two things the gateway asks of Stripe, through Stripe's official package: open a Checkout
// Session for an amount, and tell a webhook Stripe signed from one it did not.

/** Stripe's own default: a signed timestamp older than this is a replay, not a delivery. */
const SIGNATURE_TOLERANCE_S = 300;
/** The browser waits on this (twice at most, with the one retry): Stripe answers in well under a second, or not at all. */
const API_TIMEOUT_MS = 20_000;

export interface OpenedCheckout {
  id: string;
  url: string;
}

/** What the gateway reads of a Checkout Session in a webhook's event. */
export interface PaidSession {
  id: string;
  paymentStatus: string;
  amountTotal: number | null;
  currency: string | null;
  /** The payment's id: the PaymentIntent, else the session's own id (a session with no PaymentIntent). */
  paymentRef: string;
}

export interface VerifiedEvent {
  id: string;
  type: string;
  /** The event's Checkout Session, or null when its object is something else. */
  session: PaidSession | null;
}

export class StripeCheckout {
  private readonly stripe: Stripe;
  // Web Crypto: on Bun the package's synchronous check has no crypto to run on.
  private readonly crypto = Stripe.createSubtleCryptoProvider();

  constructor(private readonly cfg: StripeConfig) {
    // Stripe quotes a key it refuses (`Invalid API Key provided: sk_test_****…`): redacted like a provider's.
    rememberSecretValues([cfg.secretKey, cfg.webhookSecret]);
    this.stripe = new Stripe(cfg.secretKey, {
      httpClient: Stripe.createFetchHttpClient(),
      host: cfg.apiBase.hostname,
      port: cfg.apiBase.port || (cfg.apiBase.protocol === "http:" ? 80 : 443),
      protocol: cfg.apiBase.protocol === "http:" ? "http" : "https",
      timeout: API_TIMEOUT_MS,
      // Safe to retry: each create carries an idempotency key, so a retry never opens a second session.
      maxNetworkRetries: 1,
      telemetry: false,
    });
  }

  /** A Checkout Session for `cents` US cents, paid once, returning the browser to the given URLs. */
  async open(o: { cents: number; accountId: number; email: string; successUrl: string; cancelUrl: string; idempotencyKey: string }): Promise<OpenedCheckout> {
    let session: Stripe.Checkout.Session;
    try {
      session = await this.stripe.checkout.sessions.create(
        {
          mode: "payment",
          line_items: [{ quantity: 1, price_data: { currency: "usd", unit_amount: o.cents, product_data: { name: "Gateway balance top-up" } } }],
          success_url: o.successUrl,
          cancel_url: o.cancelUrl,
          customer_email: o.email,
          client_reference_id: String(o.accountId),
          metadata: { gateway_account_id: String(o.accountId) },
        },
        { idempotencyKey: o.idempotencyKey },
      );
    } catch (e) {
      const reason = redactSecrets(e instanceof Error ? e.message : String(e));
      throw new GatewayError("upstream_unavailable", `Stripe did not open a Checkout Session: ${reason}`, { cause: new Error(reason) });
    }
    if (!session.url) throw new GatewayError("upstream_unavailable", `Stripe opened Checkout Session ${session.id} without a payment page URL.`);
    return { id: session.id, url: session.url };
  }

  /**
   * The event of a webhook, once its `Stripe-Signature` is found to be Stripe's over exactly these
   * bytes and no older than five minutes; anything else is 400 invalid_signature.
   */
  async verify(payload: Uint8Array, header: string | null, now = Date.now()): Promise<VerifiedEvent> {
    if (!header) throw new GatewayError("invalid_signature", "This webhook carries no Stripe-Signature header.");
    let event: Stripe.Event;
    try {
      event = await this.stripe.webhooks.constructEventAsync(payload, header, this.cfg.webhookSecret, SIGNATURE_TOLERANCE_S, this.crypto, now);
    } catch (e) {
      const reason = e instanceof Error ? e.message.split("\n")[0]!.trim() : String(e);
      throw new GatewayError("invalid_signature", `The Stripe-Signature of this webhook does not check out: ${redactSecrets(reason)}`);
    }
    const object = event.data.object as { object?: string };
    return { id: event.id, type: event.type, session: object.object === "checkout.session" ? sessionOf(object as Stripe.Checkout.Session) : null };
  }
}

function sessionOf(s: Stripe.Checkout.Session): PaidSession {
  const intent = typeof s.payment_intent === "string" ? s.payment_intent : (s.payment_intent?.id ?? null);
  return { id: s.id, paymentStatus: s.payment_status, amountTotal: s.amount_total, currency: s.currency, paymentRef: intent ?? s.id };
}
