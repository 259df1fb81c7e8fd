import { api } from "../api.ts";
import { h, heading, messages, onSubmit, usd } from "../dom.ts";
import type { VerificationSent, Verified } from "../../../http/api-schemas.ts";

// The page of the emailed verification link (/verify?token=…, docs/dashboard.md#address-verification).
// Opening it changes nothing: a mail scanner or a prefetch may load it. The button POSTs the token.

export function verifyPage(token: string | null, done: () => void): HTMLElement {
  const msg = messages();
  if (!token) return h("section", {}, heading("Verify your address"), h("p", { class: "error", role: "alert" }, "This link has no token: open the link from the email as it was sent."));
  const form = h("form", { "aria-label": "Verify" }, h("button", { type: "submit" }, "Verify my address"));
  onSubmit(form, msg, async () => {
    const v = await api<Verified>("POST", "/api/verify", { token });
    // The token leaves the address bar and the history once used.
    history.replaceState(null, "", "/#/");
    form.replaceWith(
      h(
        "div",
        {},
        h("p", { class: "ok", role: "status" }, v.starting_credit_usd > 0 ? `Address verified: ${usd(v.starting_credit_usd)} of starting credit added.` : "Address verified."),
        h("p", {}, h("a", { href: "/#/", onclick: () => done() }, "Open the dashboard")),
      ),
    );
  });
  return h("section", {}, heading("Verify your address"), h("p", {}, "Press the button to confirm that this email address is yours."), form, msg.el);
}

/** The banner of an account whose address is not verified yet: why it has no credit, and a new link. */
export function unverifiedBanner(): HTMLElement {
  const msg = messages();
  const form = h("form", { "aria-label": "Send a new link", class: "inline" }, h("button", { type: "submit", class: "link" }, "Send a new link"));
  onSubmit(form, msg, async () => {
    await api<VerificationSent>("POST", "/api/verify/resend");
    msg.ok("A new link is on its way; the old one no longer works.");
  });
  return h("div", { role: "alert", class: "low", "data-testid": "verify-banner" }, h("p", {}, "Verify your address: open the link we emailed you. Your starting credit is added then. "), form, msg.el);
}
