import { api, ApiError } from "../api.ts";
import type { Ctx } from "../context.ts";
import { field, h, heading, input, messages, onSubmit, table, usd, when } from "../dom.ts";
import type { Topups } from "../types.ts";

// Top-ups through Stripe Checkout: the amount, then the browser goes to Stripe's page and comes back
// to #/topup. The balance is credited by Stripe's signed webhook, never by this page coming back.

const OPERATOR_CREDITS = "Payments are not set up on this gateway: the operator credits balances (gateway account credit). Ask them to top up your account.";

async function topups(): Promise<Topups | null> {
  try {
    return await api<Topups>("GET", "/api/topups");
  } catch (e) {
    // A gateway without the payments routes: the same answer as one without Stripe configured.
    if (e instanceof ApiError && e.status === 404) return null;
    throw e;
  }
}

function returned(params: URLSearchParams): HTMLElement | null {
  if (params.get("cancelled")) return h("p", { role: "status", class: "muted" }, "Payment cancelled: nothing was charged.");
  if (params.get("session_id")) {
    return h("p", { role: "status", class: "ok" }, "Thank you. Your balance is credited as soon as Stripe confirms the payment (usually within seconds).");
  }
  return null;
}

export async function topupView(ctx: Ctx): Promise<HTMLElement> {
  const t = await topups();
  const head = [heading("Top up"), returned(ctx.params)];
  if (!t?.enabled) return h("section", {}, ...head, h("p", { "data-testid": "payments-off" }, OPERATOR_CREDITS));
  const msg = messages();
  const form = h(
    "form",
    { "aria-label": "Top up" },
    field("Amount (USD)", input({ type: "number", name: "amount_usd", min: t.minimum_usd, step: "0.01", value: Math.max(t.minimum_usd, 5), required: true, inputmode: "decimal" }), `From ${usd(t.minimum_usd)}, in whole cents.`),
    h("button", { type: "submit" }, "Pay with Stripe"),
  );
  onSubmit(form, msg, async (d) => {
    const r = await api<{ url: string }>("POST", "/api/topups", { amount_usd: Number(d.get("amount_usd")) });
    location.assign(r.url);
  });
  return h(
    "section",
    {},
    ...head,
    h("div", { class: "narrow" }, form, msg.el),
    table(
      "Your top-ups",
      ["Started", "Amount", "Status", "Credited"],
      t.data.map((p) => [when(p.created_at), usd(p.amount_usd), p.status, when(p.credited_at)]),
      "No top-ups yet.",
    ),
  );
}
