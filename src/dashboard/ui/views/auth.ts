import { closeSection } from "./close-account.ts";
import { api } from "../api.ts";
import { account, type Ctx } from "../context.ts";
import { field, h, heading, input, messages, onSubmit } from "../dom.ts";
import type { AccountView, LoginAnswer, Registered } from "../../../http/api-schemas.ts";
import { emailChangeForm, forgotLine } from "./recovery.ts";
import { secondStepForm, twoFactorSection } from "./two-factor.ts";

// Logging in and out, registering, the password, the address and "log out everywhere" (docs/dashboard.md).

function credentialsForm(ctx: Ctx, path: "/api/login" | "/api/register", submit: string): HTMLElement {
  const msg = messages();
  const form = h(
    "form",
    { "aria-label": submit },
    field("Email", input({ type: "email", name: "email", required: true, autocomplete: "email" })),
    field(
      "Password",
      input({ type: "password", name: "password", required: true, minlength: 8, autocomplete: path === "/api/login" ? "current-password" : "new-password" }),
      path === "/api/register" ? "At least 8 characters." : undefined,
    ),
    path === "/api/register" ? field("Invite code", input({ name: "code", autocomplete: "off", spellcheck: "false", maxlength: 100 }), "Only if this gateway gave you one: its value is your starting credit.") : null,
    h("button", { type: "submit" }, submit),
  );
  const box = h("div", { class: "narrow" }, form, msg.el);
  onSubmit(form, msg, async (d) => {
    const code = String(d.get("code") ?? "").trim();
    const me = await api<LoginAnswer | Registered>("POST", path, { email: d.get("email"), password: d.get("password"), ...(code ? { code } : {}) });
    // The password was right and the account asks for a code: the same place asks for it.
    if ("second_factor_required" in me) return void box.replaceChildren(secondStepForm(ctx, me.token));
    ctx.signedIn(me);
    // The overview says why a new account has no starting credit (the day's are given out).
    ctx.go("starting_credit_limited" in me && me.starting_credit_limited ? "?starting_credit=limited" : "");
  });
  return box;
}

export async function loginView(ctx: Ctx): Promise<HTMLElement> {
  return h(
    "section",
    {},
    heading("Log in"),
    credentialsForm(ctx, "/api/login", "Log in"),
    await forgotLine(),
    h("p", {}, "No account yet? ", h("a", { href: "#/register" }, "Register")),
  );
}

export async function registerView(ctx: Ctx): Promise<HTMLElement> {
  return h(
    "section",
    {},
    heading("Register"),
    h("p", {}, "A new account starts with a small balance to try the models."),
    credentialsForm(ctx, "/api/register", "Register"),
    h("p", {}, "Have an account? ", h("a", { href: "#/login" }, "Log in")),
  );
}

export async function logout(ctx: Ctx): Promise<void> {
  await api("POST", "/api/logout");
  ctx.go("login");
}

export async function accountView(ctx: Ctx): Promise<HTMLElement> {
  const me = account(ctx);
  const pwMsg = messages();
  const pw = h(
    "form",
    { "aria-label": "Change password" },
    field("Current password", input({ type: "password", name: "current_password", required: true, autocomplete: "current-password" })),
    field("New password", input({ type: "password", name: "new_password", required: true, minlength: 8, autocomplete: "new-password" }), "At least 8 characters."),
    h("button", { type: "submit" }, "Change password"),
  );
  onSubmit(pw, pwMsg, async (d) => {
    const r = await api<{ sessions_ended: number }>("POST", "/api/password", { current_password: d.get("current_password"), new_password: d.get("new_password") });
    pw.reset();
    pwMsg.ok(`Password changed. Other sessions ended: ${r.sessions_ended}.`);
  });
  const allMsg = messages();
  const all = h("form", { "aria-label": "Log out everywhere" }, h("button", { type: "submit", class: "danger" }, "Log out everywhere"));
  onSubmit(all, allMsg, async () => {
    await api("POST", "/api/logout-all");
    ctx.go("login");
  });
  return h(
    "section",
    {},
    heading("Account"),
    h("p", {}, "Logged in as ", h("strong", {}, me.email), me.admin ? " (admin)" : ""),
    h("h2", {}, "Password"),
    h("div", { class: "narrow" }, pw, pwMsg.el),
    h("h2", {}, "Email address"),
    emailChangeForm(ctx),
    h("h2", {}, "Two-factor login"),
    twoFactorSection(ctx),
    h("h2", {}, "Sessions"),
    h("p", {}, "Ends every session of this account, on every device, this one too."),
    all,
    allMsg.el,
    // An admin's mark is taken away by the operator first (the server refuses it otherwise).
    ...(me.admin ? [] : closeSection(ctx, me)),
  );
}
