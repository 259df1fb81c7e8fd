import { api } from "../api.ts";
import { account, type Ctx } from "../context.ts";
import { copyBlock, field, h, input, messages, onSubmit } from "../dom.ts";
import type { AccountView, TwoFactorEnabled, TwoFactorSetup } from "../../../http/api-schemas.ts";

// Two-factor login (docs/dashboard.md#two-factor-login): the login's second step, and the account
// page's section that sets it up, shows the recovery codes once, and turns it off.

const codeInput = (label: string) =>
  field(label, input({ name: "code", required: true, autocomplete: "one-time-code", inputmode: "text", spellcheck: "false", maxlength: 64 }), "The 6 digits your authenticator app shows now, or one of your recovery codes.");

/** The login's second step: the token /api/login answered, with a code, opens the session. */
export function secondStepForm(ctx: Ctx, token: string): HTMLElement {
  const msg = messages();
  const form = h("form", { "aria-label": "Two-factor code" }, codeInput("Code"), h("button", { type: "submit" }, "Log in"));
  onSubmit(form, msg, async (d) => {
    const me = await api<AccountView>("POST", "/api/login/second-factor", { token, code: String(d.get("code") ?? "").trim() });
    ctx.signedIn(me);
    ctx.go("");
  });
  const box = h(
    "div",
    { class: "narrow", "data-testid": "second-step" },
    h("p", {}, "This account asks for a second factor. Enter the code from your authenticator app. Lost the app? A recovery code works once in its place."),
    form,
    msg.el,
  );
  // The focus follows the step: a screen reader hears the new question, and the code is typed at once.
  queueMicrotask(() => form.querySelector("input")?.focus());
  return box;
}

/** The account page's section: set up and enable, or disable. */
export function twoFactorSection(ctx: Ctx): HTMLElement {
  const me = account(ctx);
  const body = h("div", { "data-testid": "two-factor" });
  if (me.two_factor) body.append(disableForm(ctx));
  else {
    const start = h("button", { type: "button" }, "Set up two-factor login");
    const msg = messages();
    start.addEventListener("click", async () => {
      start.disabled = true;
      try {
        body.replaceChildren(enableForm(ctx, await api<TwoFactorSetup>("POST", "/api/me/2fa/setup")));
      } catch (e) {
        msg.fail(e);
        start.disabled = false;
      }
    });
    body.append(h("p", {}, "Off: a login asks for the password only. With it on, a login also asks for a code from an authenticator app on your phone."), start, msg.el);
  }
  return body;
}

function enableForm(ctx: Ctx, setup: TwoFactorSetup): HTMLElement {
  const msg = messages();
  const form = h(
    "form",
    { "aria-label": "Enable two-factor login" },
    field("Current password", input({ type: "password", name: "password", required: true, autocomplete: "current-password" })),
    codeInput("Code from the app"),
    h("button", { type: "submit" }, "Enable two-factor login"),
  );
  const box = h(
    "div",
    { class: "narrow" },
    h("p", {}, "Add this account to your authenticator app: scan the code with it, open the link on the phone that has the app, or type the secret into it. Then enter the code the app shows."),
    h("img", { src: setup.qr_code, alt: "QR code of this account for the authenticator app", width: 200, height: 200, class: "qr", "data-testid": "qr-code" }),
    h("p", {}, h("a", { href: setup.otpauth_uri, "data-testid": "otpauth-link" }, "Open in the authenticator app")),
    copyBlock(setup.secret, "secret"),
    copyBlock(setup.otpauth_uri, "otpauth URI"),
    form,
    msg.el,
  );
  onSubmit(form, msg, async (d) => {
    const on = await api<TwoFactorEnabled>("POST", "/api/me/2fa/enable", { password: d.get("password"), code: String(d.get("code") ?? "").trim() });
    box.replaceChildren(recoveryCodes(ctx, on));
  });
  return box;
}

/** The recovery codes, this once: the server keeps only their hashes. */
function recoveryCodes(ctx: Ctx, on: TwoFactorEnabled): HTMLElement {
  const done = h("button", { type: "button" }, "I have saved them");
  done.addEventListener("click", () => ctx.reload());
  return h(
    "div",
    { "data-testid": "recovery-codes" },
    h("p", { class: "ok" }, `Two-factor login is on. Other sessions ended: ${on.sessions_ended}.`),
    h("p", {}, h("strong", {}, "Save these recovery codes now: they are shown only this once."), " Each logs in once in place of a code from the app, if you lose it."),
    copyBlock(on.recovery_codes.join("\n"), "recovery codes"),
    done,
  );
}

function disableForm(ctx: Ctx): HTMLElement {
  const msg = messages();
  const form = h(
    "form",
    { "aria-label": "Disable two-factor login" },
    field("Current password", input({ type: "password", name: "password", required: true, autocomplete: "current-password" })),
    codeInput("Code"),
    h("button", { type: "submit", class: "danger" }, "Disable two-factor login"),
  );
  onSubmit(form, msg, async (d) => {
    await api("POST", "/api/me/2fa/disable", { password: d.get("password"), code: String(d.get("code") ?? "").trim() });
    ctx.reload();
  });
  return h("div", { class: "narrow" }, h("p", {}, "On: a login asks for a code from your authenticator app after the password."), form, msg.el);
}
