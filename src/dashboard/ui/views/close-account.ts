import { api } from "../api.ts";
import type { Ctx } from "../context.ts";
import { field, h, input, messages, onSubmit, usd } from "../dom.ts";
import type { AccountView } from "../../../http/api-schemas.ts";

// The account page's "Close account" (docs/dashboard.md#closing-the-account): final, so the form
// asks for the password and the email typed again, says what a remaining balance becomes, and asks
// once more in a dialog before it sends.

export function closeSection(ctx: Ctx, me: AccountView): HTMLElement[] {
  const msg = messages();
  const forfeit = me.balance_usd > 0;
  const form = h(
    "form",
    { "aria-label": "Close account" },
    field("Password", input({ type: "password", name: "password", required: true, autocomplete: "current-password" })),
    field("Type your email to confirm", input({ name: "confirm", required: true, autocomplete: "off", spellcheck: "false" }), me.email),
    forfeit
      ? h(
          "label",
          { class: "check" },
          input({ type: "checkbox", name: "forfeit", required: true }),
          ` I give up my remaining balance of ${usd(me.balance_usd)}: it is not refunded.`,
        )
      : null,
    h("button", { type: "submit", class: "danger" }, "Close account"),
  );
  onSubmit(
    form,
    msg,
    async (d) => {
      await api("POST", "/api/me/close", { password: d.get("password"), confirm: d.get("confirm"), ...(forfeit ? { forfeit_usd: me.balance_usd } : {}) });
      ctx.go("login");
    },
    () => ({ question: "Close this account for good? Its keys stop working at once and you cannot log in again.", yes: "Close account" }),
  );
  return [
    h("h2", {}, "Close account"),
    h(
      "p",
      {},
      "Closing is final: every key is revoked, every session ends, and the address can register again. Your statement and receipts stay with the operator.",
      forfeit ? ` A remaining balance is forfeited; to have it refunded instead, ask the operator before closing.` : "",
    ),
    h("div", { class: "narrow" }, form, msg.el),
  ];
}
