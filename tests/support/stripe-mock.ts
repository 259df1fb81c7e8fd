import { createHmac, randomBytes } from "node:crypto";

// A loopback Stripe: a real HTTP server speaking the part of Stripe's API the gateway calls
// (POST /v1/checkout/sessions, form-encoded, Bearer secret key, Idempotency-Key), and the webhook
// side: events built from its sessions and signed as Stripe signs them, `Stripe-Signature:
// t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<payload>" under the endpoint's secret>`.

export interface MockSession {
  id: string;
  object: "checkout.session";
  mode: string;
  status: "open" | "complete";
  payment_status: "unpaid" | "paid" | "no_payment_required";
  amount_total: number;
  currency: string;
  success_url: string;
  cancel_url: string;
  url: string;
  customer_email: string | null;
  client_reference_id: string | null;
  metadata: Record<string, string>;
  payment_intent: string | null;
  line_items_sent: Record<string, unknown>;
}

export interface SentRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  form: Record<string, unknown>;
}

export interface StripeMock {
  url: string;
  secretKey: string;
  webhookSecret: string;
  /** The sessions created, by id. */
  sessions: Map<string, MockSession>;
  requests: SentRequest[];
  /** Answer the next session creation with this status and Stripe error body instead. */
  failNext: { status: number; type: string; message: string } | null;
  /** The `[payments.stripe]` section of a gateway config pointing at this mock. */
  config(): { payments: { stripe: { secret_key: string; webhook_secret: string; api_base: string } } };
  /**
   * The event Stripe sends when the session's payment goes through: the session paid, with a
   * PaymentIntent id. `session` fields override what the mock holds (a tampered amount).
   */
  event(sessionId: string, opts?: { type?: string; session?: Partial<MockSession> }): { id: string; payload: string };
  /** Stripe-Signature for `payload`: signed now (or at `timestamp`, unix seconds) with the endpoint's secret (or `secret`). */
  sign(payload: string, opts?: { timestamp?: number; secret?: string }): string;
  /** POSTs a signed event to the gateway's webhook, as Stripe delivers it. */
  deliver(gatewayUrl: string, payload: string, signature?: string): Promise<Response>;
  stop(): void;
}

const id = (prefix: string) => `${prefix}_test_${randomBytes(12).toString("hex")}`;

/** `a[b][0][c]=v` pairs as nested objects, as Stripe reads them. */
export function parseStripeForm(body: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of new URLSearchParams(body)) {
    const path = key.replace(/\]/g, "").split("[");
    let at = out;
    for (const part of path.slice(0, -1)) at = (at[part] ??= {}) as Record<string, unknown>;
    at[path.at(-1)!] = value;
  }
  return out;
}

export function stripeSignature(payload: string, secret: string, timestamp = Math.floor(Date.now() / 1000)): string {
  const v1 = createHmac("sha256", secret).update(`${timestamp}.${payload}`).digest("hex");
  return `t=${timestamp},v1=${v1}`;
}

const stripeError = (status: number, type: string, message: string) => Response.json({ error: { type, message } }, { status });

export function startStripeMock(): StripeMock {
  const secretKey = `sk_test_${randomBytes(16).toString("hex")}`;
  const webhookSecret = `whsec_${randomBytes(16).toString("hex")}`;
  const sessions = new Map<string, MockSession>();
  const byIdempotencyKey = new Map<string, MockSession>();
  const requests: SentRequest[] = [];

  function createSession(form: Record<string, any>): MockSession {
    const item = form.line_items?.["0"] ?? {};
    const sid = id("cs");
    return {
      id: sid,
      object: "checkout.session",
      mode: form.mode,
      status: "open",
      payment_status: "unpaid",
      amount_total: Number(item.price_data?.unit_amount) * Number(item.quantity ?? 1),
      currency: item.price_data?.currency,
      success_url: form.success_url,
      cancel_url: form.cancel_url,
      url: `https://checkout.stripe.com/c/pay/${sid}`,
      customer_email: form.customer_email ?? null,
      client_reference_id: form.client_reference_id ?? null,
      metadata: form.metadata ?? {},
      payment_intent: null,
      line_items_sent: form.line_items,
    };
  }

  const mock: StripeMock = {
    url: "",
    secretKey,
    webhookSecret,
    sessions,
    requests,
    failNext: null,
    config: () => ({ payments: { stripe: { secret_key: secretKey, webhook_secret: webhookSecret, api_base: mock.url } } }),
    event(sessionId, opts = {}) {
      const s = sessions.get(sessionId);
      if (!s) throw new Error(`the mock has no session ${sessionId}`);
      const paid = { ...s, status: "complete", payment_status: "paid", payment_intent: s.payment_intent ?? id("pi") } as MockSession;
      sessions.set(s.id, paid);
      const eventId = id("evt");
      const object = { ...paid, ...opts.session };
      const event = { id: eventId, object: "event", api_version: "2026-10-28.endive", created: Math.floor(Date.now() / 1000), type: opts.type ?? "checkout.session.completed", livemode: false, data: { object } };
      return { id: eventId, payload: JSON.stringify(event) };
    },
    sign: (payload, opts = {}) => stripeSignature(payload, opts.secret ?? webhookSecret, opts.timestamp),
    deliver: (gatewayUrl, payload, signature = mock.sign(payload)) =>
      fetch(`${gatewayUrl}/api/stripe/webhook`, {
        method: "POST",
        headers: { "content-type": "application/json; charset=utf-8", "stripe-signature": signature, "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)" },
        body: payload,
      }),
    stop: () => server.stop(true),
  };

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      const form = parseStripeForm(await req.text());
      requests.push({ method: req.method, path, headers: Object.fromEntries(req.headers), form });
      if (req.headers.get("authorization") !== `Bearer ${secretKey}`) {
        const given = req.headers.get("authorization")?.replace(/^Bearer /, "") ?? "";
        return stripeError(401, "invalid_request_error", `Invalid API Key provided: ${given.slice(0, 8)}****${given.slice(-4)}`);
      }
      if (req.method !== "POST" || path !== "/v1/checkout/sessions") return stripeError(404, "invalid_request_error", `Unrecognized request URL (${req.method}: ${path}).`);
      if (mock.failNext) {
        const f = mock.failNext;
        mock.failNext = null;
        return stripeError(f.status, f.type, f.message);
      }
      const key = req.headers.get("idempotency-key");
      const again = key ? byIdempotencyKey.get(key) : undefined;
      if (again) return Response.json(again);
      const session = createSession(form);
      sessions.set(session.id, session);
      if (key) byIdempotencyKey.set(key, session);
      return Response.json(session);
    },
  });
  mock.url = `http://127.0.0.1:${server.port}`;
  return mock;
}
