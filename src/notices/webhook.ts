import { createHmac, randomBytes } from "node:crypto";
import type { NotificationsConfig } from "../config/notices.ts";

// The operator's webhook (`[notifications]`, docs/operations.md#email-and-notifications): each event a JSON
// POST signed as Stripe signs its own, so that a receiver verifies it with the same few lines:
// x-gateway-signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>.

export type EventType = "account.registered" | "account.verified" | "balance.low" | "budget.reached" | "topup.credited" | "account.closed" | "account.email_changed";

export interface GatewayEvent {
  id: string;
  type: EventType;
  /** Unix seconds. */
  created: number;
  data: Record<string, unknown>;
}

export const SIGNATURE_HEADER = "x-gateway-signature";

export function signature(secret: string, timestamp: number, body: string): string {
  return `t=${timestamp},v1=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`;
}

export function newEvent(type: EventType, data: Record<string, unknown>, now = Date.now()): GatewayEvent {
  return { id: `evt_${randomBytes(12).toString("hex")}`, type, created: Math.floor(now / 1000), data };
}

/** One delivery attempt: signed at the attempt's time, refused unless the receiver answers 2xx. */
export async function postEvent(config: NotificationsConfig, event: GatewayEvent, timeoutMs = 10_000): Promise<void> {
  const body = JSON.stringify(event);
  const res = await fetch(config.webhookUrl, {
    method: "POST",
    headers: { "content-type": "application/json", "user-agent": "gateway-notifications", [SIGNATURE_HEADER]: signature(config.webhookSecret, Math.floor(Date.now() / 1000), body) },
    body,
    redirect: "manual",
    signal: AbortSignal.timeout(timeoutMs),
  });
  await res.arrayBuffer().catch(() => undefined);
  if (res.status < 200 || res.status > 299) throw new Error(`HTTP ${res.status}`);
}
