import { api, ApiError } from "./api.ts";
import type { Ctx, View } from "./context.ts";
import { failure, h, loading, usd } from "./dom.ts";
import type { AccountView, SessionState } from "../../http/api-schemas.ts";
import { adminView } from "./views/admin.ts";
import { adminAccountView } from "./views/admin-account.ts";
import { accountView, loginView, logout, registerView } from "./views/auth.ts";
import { keysView } from "./views/keys.ts";
import { modelsView } from "./views/models.ts";
import { overviewView } from "./views/overview.ts";
import { topupView } from "./views/topup.ts";
import { usageView } from "./views/usage.ts";
import { unverifiedBanner, verifyPage } from "./views/verify.ts";
import { confirmEmailView, forgotView, resetView } from "./views/recovery.ts";

// The page's shell: a hash router (#/keys, #/topup?session_id=…, the form Stripe returns to), the
// navigation and the low-balance banner. The register page asks nothing of the server, the login
// page only whether to offer a reset by email, and the others ask GET /api/session first, which
// answers 200 without a session too: a visitor's first page makes no request that is refused. Every view gets the same loading state (aria-busy, a spinner that is
// read out) and the same failure panel (what failed, the request id, a Retry of just that view).

interface Route {
  title: string;
  view: View;
  /** Shown to visitors; the others need a session. */
  visitor?: boolean;
  admin?: boolean;
}

const ROUTES: Record<string, Route> = {
  login: { title: "Log in", view: loginView, visitor: true },
  register: { title: "Register", view: registerView, visitor: true },
  // The emailed links' pages (docs/dashboard.md#password-reset): the token in the hash's query.
  forgot: { title: "Forgot password", view: forgotView, visitor: true },
  reset: { title: "Reset password", view: resetView, visitor: true },
  "confirm-email": { title: "Confirm email", view: confirmEmailView, visitor: true },
  "": { title: "Overview", view: overviewView },
  keys: { title: "Keys", view: keysView },
  usage: { title: "Usage", view: usageView },
  models: { title: "Models", view: modelsView },
  topup: { title: "Top up", view: topupView },
  account: { title: "Account", view: accountView },
  admin: { title: "Admin", view: adminView, admin: true },
  // #/admin/account/ID: the id goes to the view as the `id` parameter.
  "admin/account": { title: "Account (admin)", view: adminAccountView, admin: true },
};

const NAV = ["", "keys", "usage", "models", "topup", "account", "admin"];

const view = document.getElementById("view")!;
const nav = document.getElementById("nav")!;
const banner = document.getElementById("banner")!;
let me: AccountView | null = null;

function parseHash(): { name: string; params: URLSearchParams } {
  const [path = "", q = ""] = location.hash.replace(/^#\/?/, "").split("?");
  const params = new URLSearchParams(q);
  const account = /^admin\/account\/(\d{1,15})$/.exec(path);
  if (account) {
    params.set("id", account[1]!);
    return { name: "admin/account", params };
  }
  return { name: path in ROUTES ? path : "", params };
}

const go = (route: string) => {
  const target = "#/" + route;
  if (location.hash === target) void render();
  else location.hash = target;
};

function drawShell(current: string) {
  const links = NAV.filter((n) => me && (!ROUTES[n]!.admin || me.admin)).map((n) =>
    h("li", {}, h("a", { href: "#/" + n, "aria-current": n === current ? "page" : null }, ROUTES[n]!.title)),
  );
  nav.replaceChildren();
  if (me) {
    nav.append(
      h("ul", {}, ...links),
      h("p", { class: "who" }, h("span", { "data-testid": "nav-spendable" }, usd(me.spendable_usd)), " · ", me.email),
      h("button", { type: "button", class: "link", onclick: () => void logout(ctx()) }, "Log out"),
    );
  }
  banner.replaceChildren();
  if (me && !me.email_verified) banner.append(unverifiedBanner());
  if (me?.low_balance.below) {
    banner.append(
      h("p", { role: "alert", class: "low" }, `Your spendable balance (${usd(me.spendable_usd)}) is below your alert of ${usd(me.low_balance.threshold_usd)}. `, h("a", { href: "#/topup" }, "Top up")),
    );
  }
}

function ctx(params = new URLSearchParams()): Ctx {
  return {
    me,
    params,
    go,
    reload: () => void render(),
    signedIn(account) {
      me = account;
      // A view that changed the money (a redeemed code) shows it in the shell at once, without re-rendering itself.
      if (nav.childElementCount > 0) drawShell(parseHash().name);
    },
  };
}

/**
 * The address of the view shown now: the same view loaded again (after a change, or polling) stays
 * on screen, dimmed while busy; another address, other filters too, shows the spinner at once, so
 * nothing stale can be read or clicked.
 */
let shown: string | null = null;
let rendering = 0;
async function render(): Promise<void> {
  const turn = ++rendering;
  const { name, params } = parseHash();
  const route = ROUTES[name]!;
  view.setAttribute("aria-busy", "true");
  if (shown !== location.hash) view.replaceChildren(loading(`Loading ${route.title.toLowerCase()}…`));
  let content: HTMLElement;
  try {
    if (route.visitor) me = null;
    else {
      const s = await api<SessionState>("GET", "/api/session");
      if (!s.logged_in) return go("login");
      me = s.account;
    }
    if (route.admin && !me?.admin) return go("");
    content = await route.view(ctx(params));
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return go("login");
    content = failure(route.title, e, () => void render());
  } finally {
    if (turn === rendering) view.removeAttribute("aria-busy");
  }
  // A newer navigation started while this one waited: its page wins.
  if (turn !== rendering) return;
  document.title = `${route.title} · Gateway`;
  drawShell(name);
  // A failed view is loaded afresh by its Retry: the spinner again, not the failure dimmed.
  shown = content.classList.contains("failed") ? null : location.hash;
  view.replaceChildren(content);
  view.querySelector<HTMLElement>("h1")?.focus();
}

window.addEventListener("hashchange", () => void render());
if (location.pathname === "/verify") {
  document.title = "Verify your address · Gateway";
  view.removeAttribute("aria-busy");
  view.replaceChildren(verifyPage(new URLSearchParams(location.search).get("token"), () => void render()));
} else void render();
