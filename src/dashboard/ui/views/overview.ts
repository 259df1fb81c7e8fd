import { api } from "../api.ts";
import { account, type Ctx } from "../context.ts";
import { field, h, heading, input, messages, onSubmit, usd } from "../dom.ts";
import type { AccountView, KeyList, Pricing } from "../../../http/api-schemas.ts";
import { spendSection } from "./spend.ts";

// The balance and the spend at a glance, and the low-balance alert's threshold.

const figure = (label: string, value: string, id: string) => h("div", { class: "figure" }, h("dt", {}, label), h("dd", { "data-testid": id }, value));

export async function overviewView(ctx: Ctx): Promise<HTMLElement> {
  const me = account(ctx);
  const choices = Promise.all([api<KeyList>("GET", "/api/keys"), api<Pricing>("GET", "/api/pricing")]).then(([k, p]) => ({ keys: k.data, models: p.models.map((m) => m.id) }));
  const spend = await spendSection(ctx, choices);
  const msg = messages();
  const threshold = input({ type: "number", name: "threshold", min: 0, step: "0.01", inputmode: "decimal", value: me.low_balance.threshold_usd ?? "" });
  const form = h(
    "form",
    { "aria-label": "Low-balance alert" },
    field("Alert me below (USD)", threshold, "Leave empty for no alert. The alert shows here and in GET /v1/me."),
    h("button", { type: "submit" }, "Save alert"),
  );
  onSubmit(form, msg, async (d) => {
    const v = String(d.get("threshold") ?? "").trim();
    await api<AccountView>("PUT", "/api/me/low-balance", { threshold_usd: v === "" ? null : Number(v) });
    ctx.reload();
  });
  return h(
    "section",
    {},
    heading("Overview"),
    h(
      "dl",
      { class: "figures" },
      figure("Balance", usd(me.balance_usd), "balance"),
      figure("Held by running requests", usd(me.held_usd), "held"),
      figure("Spendable", usd(me.spendable_usd), "spendable"),
    ),
    ctx.params.get("starting_credit") === "limited"
      ? h("p", { class: "low", "data-testid": "starting-credit-limited" }, "Today's starting credits for new accounts are all given out, so this account starts at 0. Top up to use the models.")
      : null,
    me.low_balance.below ? h("p", { class: "low" }, `Spendable is below your alert of ${usd(me.low_balance.threshold_usd)}.`) : null,
    h("p", {}, h("a", { href: "#/keys" }, "Create a key"), " · ", h("a", { href: "#/models" }, "Models and how to connect"), " · ", h("a", { href: "#/topup" }, "Top up")),
    spend,
    h("h2", {}, "Low-balance alert"),
    h("div", { class: "narrow" }, form, msg.el),
  );
}
