import { Type as T } from "@sinclair/typebox";
import { nanoToUsd } from "../../core/money.ts";
import type { CheckoutSession } from "../../store/checkouts/contract.ts";
import { MINIMUM_TOP_UP_NANO, notConfigured } from "../../payments/topups.ts";
import type { SessionCall } from "../session-guard.ts";
import { readBodyLimited } from "../body.ts";
import { json, pathParam, type OpenCall } from "../exchange.ts";
import { GatewayError } from "../../core/errors.ts";
import { issuerOf, RECEIPT_POLICY, receiptHtml } from "../../payments/receipt.ts";
import { isoTime } from "../../core/time.ts";
import type { CheckoutOpened, TopUps, TopUpView, WebhookReceived } from "../api-schemas.ts";

// Top-ups under /api/ (docs/dashboard.md, Top-ups): the holder's checkout sessions, a new one, and
// Stripe's webhook, which is the only thing that credits. The rules are payments/topups.ts's.

export const TopUpBody = T.Object({ amount_usd: T.Number() }, { additionalProperties: false });

/** A Checkout Session event is a few kilobytes; a megabyte leaves room and refuses abuse. */
const WEBHOOK_BODY_LIMIT = 1024 * 1024;


const topUpView = (s: CheckoutSession): TopUpView => ({
  id: s.id,
  amount_usd: nanoToUsd(s.amountNano),
  status: s.status,
  created_at: isoTime(s.createdAt),
  credited_at: isoTime(s.creditedAt),
});

export const listTopUps = async (c: SessionCall): Promise<Response> =>
  json<TopUps>({
    object: "topups",
    enabled: c.svc.payments.enabled,
    // Whom to ask for credit (`[dashboard] support_contact`): the page names it beside the code form.
    support_contact: c.svc.config.dashboard.supportContact,
    minimum_usd: nanoToUsd(MINIMUM_TOP_UP_NANO),
    data: (await c.svc.payments.list(c.session!.accountId)).map(topUpView),
  });

export async function createTopUp(c: SessionCall): Promise<Response> {
  const { svc, session } = c;
  if (!svc.payments.enabled) throw notConfigured();
  // Where Checkout sends the browser back: the dashboard, at public_url or else where this request came.
  const returnTo = svc.config.publicUrl ? svc.config.publicUrl.replace(/\/+$/, "") : new URL(c.request.url).origin;
  const opened = await svc.payments.start({
    accountId: session!.accountId,
    email: (await svc.accounts.findById(session!.accountId))!.email,
    amountUsd: (c.json as { amount_usd: number }).amount_usd,
    returnTo,
    requestId: c.requestId,
  });
  return json<CheckoutOpened>({ object: "topup", id: opened.id, url: opened.url, amount_usd: nanoToUsd(opened.amountNano) }, 201);
}

/** POST /api/stripe/webhook: no session and no Origin (Stripe's servers call it); the signature is the credential. */
export async function stripeWebhook(c: OpenCall): Promise<Response> {
  if (!c.svc.payments.enabled) throw notConfigured();
  const payload = await readBodyLimited(c.request, WEBHOOK_BODY_LIMIT);
  const outcome = await c.svc.payments.webhook(payload, c.request.headers.get("stripe-signature"));
  return json<WebhookReceived>({ received: true, ...outcome }, 200, { "cache-control": "no-store" });
}

/**
 * GET /api/topups/:id/receipt: a credited card top-up's printable receipt, to its account's holder
 * or an admin. Any other id (another holder's, a pending one, none) gets the same 404.
 */
export async function getReceipt(c: SessionCall): Promise<Response> {
  const { svc } = c;
  const id = pathParam(c, "id");
  const receipt = id.length <= 255 ? await svc.payments.receipt(id) : null;
  const mine = receipt !== null && (receipt.accountId === c.session!.accountId || (await svc.accounts.profileOf(c.session!.accountId))?.admin === true);
  if (!receipt || !mine) throw new GatewayError("topup_not_found", `No credited top-up of this account has the id ${id}.`);
  return new Response(receiptHtml(receipt, issuerOf(svc.config, new URL(c.request.url).origin)), {
    headers: {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": RECEIPT_POLICY,
      "x-frame-options": "DENY",
      "x-content-type-options": "nosniff",
      "cache-control": "private, no-store",
    },
  });
}
