import Stripe from "stripe";
import type { StripeConfig } from "../config/load.ts";
import { GatewayError } from "../core/errors.ts";
import { events } from "../core/events.ts";
import { redactSecrets, rememberSecretValues } from "../wire/scrub.ts";
import { MalformedEvent, readEvent, type VerifiedEvent } from "./stripe-event.ts";

// The two things the gateway asks of Stripe, through Stripe's official package: open a Checkout
// Session for an amount, and tell a webhook Stripe signed from one it did not.

/**
 * Stripe's own default: a signature dated further than this from the gateway's clock, either way, is
 * not a delivery (older: a replay; newer: one made ahead of time, which the package lets through).
 */
const SIGNATURE_TOLERANCE_S = 300;
/** The browser waits on this (twice at most, with the one retry): Stripe answers in well under a second, or not at all. */
const API_TIMEOUT_MS = 20_000;

export interface OpenedCheckout {
  id: string;
  url: string;
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
   * bytes and dated within five minutes of now, either way (else 400 invalid_signature), and its body
   * is the shape Stripe sends (else 400 invalid_request, and an operator event).
   */
  async verify(payload: Uint8Array, header: string | null, now = Date.now()): Promise<VerifiedEvent> {
    if (!header) throw new GatewayError("invalid_signature", "This webhook carries no Stripe-Signature header.");
    let body: unknown;
    try {
      body = await this.stripe.webhooks.constructEventAsync(payload, header, this.cfg.webhookSecret, SIGNATURE_TOLERANCE_S, this.crypto, now);
    } catch (e) {
      // Past the signature, the package throws on the body: JSON.parse's SyntaxError, or a v2 "thin event".
      if (e instanceof SyntaxError) throw malformed(new MalformedEvent("the body is not JSON", null));
      if (!(e instanceof Stripe.errors.StripeSignatureVerificationError)) {
        if (e instanceof Error && e.message.includes("thin event")) throw malformed(new MalformedEvent("the body is a v2 event notification, not an event", null));
        throw e;
      }
      const reason = e.message.split("\n")[0]!.trim();
      throw new GatewayError("invalid_signature", `The Stripe-Signature of this webhook does not check out: ${redactSecrets(reason)}`);
    }
    // The package bounds only a signature's age, so one dated an hour ahead would pass for an hour and five minutes.
    const ahead = signedAt(header) - Math.floor(now / 1000);
    if (!(ahead <= SIGNATURE_TOLERANCE_S)) {
      throw new GatewayError("invalid_signature", `The Stripe-Signature of this webhook is dated in the future: more than ${SIGNATURE_TOLERANCE_S} s ahead of this gateway's clock.`);
    }
    try {
      return readEvent(body);
    } catch (e) {
      throw e instanceof MalformedEvent ? malformed(e) : e;
    }
  }
}

/**
 * The `t=` of a Stripe-Signature read as Stripe's package reads it (the last one, by parseInt), so
 * the moment checked is the one that was signed. NaN when there is none to read.
 */
function signedAt(header: string): number {
  let t = Number.NaN;
  for (const item of header.split(",")) {
    const [key, value] = item.split("=");
    if (key === "t") t = parseInt(value ?? "", 10);
  }
  return t;
}

/** A signed event of the wrong shape: the operator hears of it (someone holds the secret, or Stripe changed), the sender gets a 400. */
function malformed(e: MalformedEvent): GatewayError {
  events.stripeEventMalformed({ event: e.eventId, reason: e.reason });
  return new GatewayError("invalid_request", `This Stripe event is malformed: ${e.reason}. Nothing was credited.`);
}
