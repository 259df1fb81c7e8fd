import { createHmac, timingSafeEqual } from "node:crypto";

// A loopback receiver of the gateway's webhook events (`[notifications] webhook_url`): keeps each
// delivery with its x-gateway-signature, verified the way a receiver would verify Stripe's scheme.

export interface Delivery {
  event: { id: string; type: string; created: number; data: Record<string, unknown> };
  body: string;
  signature: string;
  /** The signature checked against the secret: t=..., v1=HMAC-SHA256(secret, "t.body"). */
  valid: boolean;
}

export interface WebhookReceiver {
  url: string;
  secret: string;
  deliveries: Delivery[];
  /** Answer the next `n` deliveries with 503 (a receiver down). */
  failNext: number;
  /** The first delivery of `type` (whose data has `data`'s fields), waited for up to `timeoutMs`. */
  waitFor(type: string, data?: Record<string, unknown>, timeoutMs?: number): Promise<Delivery>;
  config(): { notifications: { webhook_url: string; webhook_secret: string } };
  stop(): void;
}

/** Stripe's verification, as a receiver's own code would write it, with the gateway's header name. */
export function verifySignature(secret: string, header: string, body: string, toleranceS = 300): boolean {
  const parts = Object.fromEntries(header.split(",").map((p) => p.split("=", 2) as [string, string]));
  const t = Number(parts.t);
  if (!Number.isInteger(t) || !parts.v1 || Math.abs(Date.now() / 1000 - t) > toleranceS) return false;
  const expected = Buffer.from(createHmac("sha256", secret).update(`${t}.${body}`).digest("hex"));
  const given = Buffer.from(parts.v1);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export function startWebhookReceiver(secret = "whsec_loopback_0123456789"): WebhookReceiver {
  const deliveries: Delivery[] = [];
  const receiver: WebhookReceiver = {
    url: "",
    secret,
    deliveries,
    failNext: 0,
    async waitFor(type, data = {}, timeoutMs = 10_000) {
      const until = Date.now() + timeoutMs;
      const fits = (x: Delivery) => x.event.type === type && Object.entries(data).every(([k, v]) => x.event.data[k] === v);
      for (;;) {
        const d = deliveries.find(fits);
        if (d) return d;
        if (Date.now() > until) throw new Error(`no ${type} event within ${timeoutMs} ms (got ${deliveries.map((x) => x.event.type).join(", ") || "none"})`);
        await Bun.sleep(20);
      }
    },
    config: () => ({ notifications: { webhook_url: receiver.url, webhook_secret: secret } }),
    stop: () => server.stop(true),
  };
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const body = await req.text();
      if (receiver.failNext > 0) {
        receiver.failNext--;
        return new Response("down", { status: 503 });
      }
      const signature = req.headers.get("x-gateway-signature") ?? "";
      deliveries.push({ event: JSON.parse(body), body, signature, valid: verifySignature(secret, signature, body) });
      return new Response("ok");
    },
  });
  receiver.url = `http://127.0.0.1:${server.port}/gateway-events`;
  return receiver;
}
