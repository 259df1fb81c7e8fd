import { api, ApiError } from "../api.ts";
import type { Ctx } from "../context.ts";
import { field, h, heading, input, messages, onSubmit, table, usd, when } from "../dom.ts";
import type { AccountView, Redeemed, TopUps } from "../../../http/api-schemas.ts";

// Top-ups through Stripe Checkout: the amount, then the browser goes to Stripe's page and comes back
// to #/topup. The balance is credited by Stripe's signed webhook, never by this page coming back.

const NO_CARDS = "Card payments are not set up on this gateway: the operator credits balances, or gives redemption codes.";

/** Whom to ask for credit: `[dashboard] support_contact` as a link (mailto: for an email), else the operator. */
function askWhom(contact: string | null): HTMLElement {
  if (!contact) return h("p", { "data-testid": "support-contact" }, "Ask the operator of this gateway for credit or a code.");
  const href = /^https?:\/\//i.test(contact) ? contact : /^[^\s@]+@[^\s@]+$/.test(contact) ? `mailto:${contact}` : null;
  return h("p", { "data-testid": "support-contact" }, "For credit or a code, ask ", href ? h("a", { href, rel: "noopener" }, contact) : h("strong", {}, contact), ".");
}

/** A redemption code's form: its value credited once; the balance in the header follows. */
function redeemForm(ctx: Ctx, balance: HTMLElement): HTMLElement {
  const msg = messages();
  const form = h(
    "form",
    { "aria-label": "Redeem a code" },
    field("Code", input({ name: "code", required: true, autocomplete: "off", spellcheck: "false", placeholder: "GW-XXXX-XXXX-XXXX-XXXX", maxlength: 100 })),
    h("button", { type: "submit" }, "Redeem"),
  );
  onSubmit(form, msg, async (d) => {
    const me = await api<Redeemed>("POST", "/api/redeem", { code: String(d.get("code")) });
    form.reset();
    ctx.signedIn(me);
    balance.textContent = usd(me.balance_usd);
    msg.ok(`Redeemed: ${usd(me.redeemed_usd)} added. Your balance is ${usd(me.balance_usd)}.`);
  });
  return h("div", { class: "narrow" }, h("h2", {}, "Redeem a code"), form, msg.el);
}

async function topups(): Promise<TopUps | null> {
  try {
    return await api<TopUps>("GET", "/api/topups");
  } catch (e) {
    // A gateway without the payments routes: the same answer as one without Stripe configured.
    if (e instanceof ApiError && e.status === 404) return null;
    throw e;
  }
}

// Back from Stripe, the webhook may not have arrived yet: the page asks again every 2 s for a
// minute, then leaves it to the holder (the webhook still credits whenever it comes).
const POLL_MS = 2000;
const POLLS = 30;
const polled = new Map<string, number>();

function returned(ctx: Ctx, t: TopUps | null): HTMLElement | null {
  const { params } = ctx;
  if (params.get("cancelled")) return h("p", { role: "status", class: "muted" }, "Payment cancelled: nothing was charged.");
  const id = params.get("session_id");
  if (!id) return null;
  if (t?.data.find((p) => p.id === id)?.status === "credited") {
    return h("p", { role: "status", class: "ok", "data-testid": "topup-credited" }, "Thank you: the payment is confirmed and your balance is credited.");
  }
  const n = polled.get(id) ?? 0;
  if (n < POLLS) {
    polled.set(id, n + 1);
    const hash = location.hash;
    setTimeout(() => {
      if (location.hash === hash) ctx.reload();
    }, POLL_MS);
  }
  return h("p", { role: "status", class: "ok" }, "Thank you. Your balance is credited as soon as Stripe confirms the payment (usually within seconds).");
}

export async function topupView(ctx: Ctx): Promise<HTMLElement> {
  const t = await topups();
  const balance = h("strong", { "data-testid": "topup-balance" }, usd(ctx.me?.balance_usd));
  const head = [heading("Top up"), h("p", {}, "Balance: ", balance), returned(ctx, t)];
  if (!t?.enabled) return h("section", {}, ...head, h("p", { "data-testid": "payments-off" }, NO_CARDS), askWhom(t?.support_contact ?? null), redeemForm(ctx, balance));
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
    redeemForm(ctx, balance),
    table(
      "Your top-ups",
      ["Started", "Amount", "Status", "Credited", "Receipt"],
      t.data.map((p) => [
        when(p.created_at),
        usd(p.amount_usd),
        p.status,
        when(p.credited_at),
        // A page of its own, to print or save: it opens beside the dashboard.
        p.status === "credited" ? h("a", { href: `/api/topups/${encodeURIComponent(p.id)}/receipt`, target: "_blank", rel: "noopener", "data-testid": "receipt-link" }, "Receipt") : "",
      ]),
      "No top-ups yet.",
    ),
  );
}
