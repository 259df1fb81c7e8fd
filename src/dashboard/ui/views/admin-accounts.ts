import { api } from "../api.ts";
import type { Ctx } from "../context.ts";
import { field, h, input, messages, onSubmit, table, truncated, usd, when } from "../dom.ts";
import type { AdminAccount, AdminAccountList } from "../../../http/api-schemas.ts";

// The admin page's accounts: a search by email or id answered by the server a page at a time (the
// query is in the address, #/admin?q=…&offset=…), one line per account linking to its page, and a
// form that creates an account for someone.

const PAGE = 25;

/** The admin page's address with this search and offset. */
const searchHref = (q: string, offset: number) => {
  const p = new URLSearchParams();
  if (q) p.set("q", q);
  if (offset) p.set("offset", String(offset));
  const s = p.toString();
  return `#/admin${s ? `?${s}` : ""}`;
};

export const accountHref = (id: number) => `#/admin/account/${id}`;

const row = (a: AdminAccount) => [
  h("a", { href: accountHref(a.id) }, truncated(a.email)),
  a.admin ? "admin" : "",
  h("span", { "data-testid": `balance-${a.id}` }, usd(a.balance_usd)),
  usd(a.held_usd),
  String(a.keys),
  usd(a.spent_month_usd),
  when(a.last_activity_at),
  a.closed ? "closed" : a.disabled ? "disabled" : "active",
  h("span", { "data-testid": `two-factor-${a.id}` }, a.two_factor ? "on" : "off"),
];

function newAccountForm(ctx: Ctx): HTMLElement {
  const msg = messages();
  const form = h(
    "form",
    { "aria-label": "Create an account", class: "inline" },
    field("Email", input({ type: "email", name: "email", required: true, maxlength: 320, size: 22 })),
    field("Opening balance (USD)", input({ type: "number", name: "balance", min: "0", step: "0.01", inputmode: "decimal", size: 6 })),
    field("Password (optional)", input({ type: "password", name: "password", minlength: 8, autocomplete: "new-password", size: 12 })),
    h("button", { type: "submit" }, "Create account"),
  );
  onSubmit(form, msg, async (d) => {
    const balance = String(d.get("balance") ?? "");
    const password = String(d.get("password") ?? "");
    const made = await api<AdminAccount>("POST", "/api/admin/accounts", {
      email: String(d.get("email")),
      ...(balance ? { balance_usd: balance } : {}),
      ...(password ? { password } : {}),
    });
    ctx.go(accountHref(made.id).slice(2));
  });
  return h("details", {}, h("summary", {}, "New account"), form, msg.el);
}

export async function accountsSection(ctx: Ctx): Promise<HTMLElement> {
  const q = ctx.params.get("q") ?? "";
  const offset = Number(ctx.params.get("offset") ?? 0) || 0;
  const list = await api<AdminAccountList>("GET", `/api/admin/accounts?${new URLSearchParams({ q, offset: String(offset), limit: String(PAGE) })}`);
  const search = h(
    "form",
    { role: "search", "aria-label": "Find accounts", class: "inline" },
    field("Email or account id", input({ type: "search", name: "q", value: q, size: 24 })),
    h("button", { type: "submit" }, "Search"),
  );
  search.addEventListener("submit", (e) => {
    e.preventDefault();
    location.hash = searchHref(String(new FormData(search).get("q") ?? "").trim(), 0);
  });
  const last = offset + list.data.length;
  const pager = h(
    "p",
    { class: "pager" },
    list.total === 0 ? "No account matches." : `${offset + 1}–${last} of ${list.total}`,
    offset > 0 ? h("a", { href: searchHref(q, Math.max(0, offset - PAGE)) }, "Previous") : null,
    last < list.total ? h("a", { href: searchHref(q, last) }, "Next") : null,
  );
  return h(
    "section",
    { "aria-label": "Accounts" },
    h("h2", {}, "Accounts"),
    search,
    newAccountForm(ctx),
    table("Accounts", ["Email", "Role", "Balance", "Held", "Keys", "Spent this month", "Last activity", "State", "Two-factor"], list.data.map(row), q ? `No account matches “${q}”.` : "No accounts.", {
      oneLine: true,
      numeric: [2, 3, 4, 5],
    }),
    pager,
  );
}
