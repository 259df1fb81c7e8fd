import { api } from "../api.ts";
import type { Ctx } from "../context.ts";
import { field, h, heading, input, messages, onSubmit } from "../dom.ts";
import type { EmailChange, PasswordReset, SessionState } from "../../../http/api-schemas.ts";

// A forgotten password and a change of address (docs/dashboard.md#password-reset, #change-of-email).
// The emailed links open #/reset?token=… and #/confirm-email?token=…: the token rides in the fragment,
// which the browser sends to no server (no access log, no Referer); the page POSTs it, and drops it
// from the address bar and the history once used.

/** The login page's line: a "Forgot password?" link under [email], the operator otherwise. */
export async function forgotLine(): Promise<HTMLElement> {
  const s = await api<SessionState>("GET", "/api/session").catch(() => null);
  if (s && !s.logged_in && s.password_reset) {
    return h("p", { "data-testid": "forgot-password" }, h("a", { href: "#/forgot" }, "Forgot password?"));
  }
  // No reset by email: the operator's admin page (Set password) or `gateway account update` sets one.
  return h("p", { "data-testid": "forgot-password" }, "Forgot your password? The gateway sends no reset email: ask its operator to set a new one.");
}

export async function forgotView(): Promise<HTMLElement> {
  const msg = messages();
  const form = h(
    "form",
    { "aria-label": "Send a reset link" },
    field("Email", input({ type: "email", name: "email", required: true, autocomplete: "email" })),
    h("button", { type: "submit" }, "Send a reset link"),
  );
  onSubmit(form, msg, async (d) => {
    await api("POST", "/api/password/forgot", { email: d.get("email") });
    // The same words for every address: the page tells no more than the server does.
    msg.ok("If an account has this address (and it is verified), a reset link is on its way. It works once, for 1 hour.");
  });
  return h(
    "section",
    {},
    heading("Forgot password"),
    h("p", {}, "Enter the email of your account: we send a link to choose a new password."),
    h("div", { class: "narrow" }, form, msg.el),
    h("p", {}, h("a", { href: "#/login" }, "Back to log in")),
  );
}

const noToken = (title: string) =>
  h("section", {}, heading(title), h("p", { class: "error", role: "alert" }, "This link has no token: open the link from the email as it was sent."));

export async function resetView(ctx: Ctx): Promise<HTMLElement> {
  const token = ctx.params.get("token");
  if (!token) return noToken("Choose a new password");
  const msg = messages();
  const form = h(
    "form",
    { "aria-label": "Reset password" },
    field("New password", input({ type: "password", name: "password", required: true, minlength: 8, autocomplete: "new-password" }), "At least 8 characters."),
    h("button", { type: "submit" }, "Set the new password"),
  );
  onSubmit(form, msg, async (d) => {
    const r = await api<PasswordReset>("POST", "/api/password/reset", { token, password: d.get("password") });
    history.replaceState(null, "", "/#/reset");
    form.replaceWith(
      h(
        "div",
        {},
        h("p", { class: "ok", role: "status" }, `Password changed. Sessions logged out: ${r.sessions_ended}.`),
        h("p", {}, h("a", { href: "#/login" }, "Log in")),
      ),
    );
  });
  return h("section", {}, heading("Choose a new password"), h("p", {}, "Every session of the account is logged out when it is set."), h("div", { class: "narrow" }, form, msg.el));
}

export async function confirmEmailView(ctx: Ctx): Promise<HTMLElement> {
  const token = ctx.params.get("token");
  if (!token) return noToken("Confirm your new address");
  const msg = messages();
  // A button, not the page's loading: a mail scanner that opens the link confirms nothing.
  const form = h("form", { "aria-label": "Confirm" }, h("button", { type: "submit" }, "Confirm my new address"));
  onSubmit(form, msg, async () => {
    const r = await api<EmailChange>("POST", "/api/me/email/confirm", { token });
    history.replaceState(null, "", "/#/confirm-email");
    form.replaceWith(h("div", {}, h("p", { class: "ok", role: "status" }, `Your account's address is now ${r.email}.`), h("p", {}, h("a", { href: "#/" }, "Open the dashboard"))));
  });
  return h("section", {}, heading("Confirm your new address"), h("p", {}, "Press the button to make this address your account's."), form, msg.el);
}

/** The account page's form: under [email] a link to the new address, else the change at once. */
export function emailChangeForm(ctx: Ctx): HTMLElement {
  const msg = messages();
  const form = h(
    "form",
    { "aria-label": "Change email" },
    field("New email", input({ type: "email", name: "new_email", required: true, autocomplete: "email" })),
    field("Current password", input({ type: "password", name: "password", required: true, autocomplete: "current-password" })),
    h("button", { type: "submit" }, "Change email"),
  );
  onSubmit(form, msg, async (d) => {
    const next = String(d.get("new_email"));
    const r = await api<EmailChange>("POST", "/api/me/email", { new_email: next, password: d.get("password") });
    form.reset();
    if (r.email_changed) return ctx.reload();
    msg.ok(`A confirmation link was sent to ${next}. Your address changes when you open it; until then it stays ${r.email}.`);
  });
  return h("div", { class: "narrow" }, form, msg.el);
}
