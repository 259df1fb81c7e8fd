import { api } from "../api.ts";
import type { Ctx } from "../context.ts";
import { copyBlock, field, h, heading, input, messages, onSubmit, table, truncated, usd, when } from "../dom.ts";
import type { AdminAccountDetail, AdminNote, KeyView, NewKeyView, PasswordChanged } from "../../../http/api-schemas.ts";
import { accountSwitch, moneyForm } from "./admin-money.ts";

// One account's page for the operator (#/admin/account/ID): its money with credit or debit, disable,
// the operator's note, its dashboard password, its keys (revoke, or make one for the holder: shown here once), its newest
// requests and its ledger.

const detailOf = (id: string) => api<AdminAccountDetail>("GET", `/api/admin/accounts/${id}`);

function keysTable(d: AdminAccountDetail, msg: ReturnType<typeof messages>, refresh: () => Promise<void>): HTMLElement {
  const revoke = (k: KeyView) =>
    k.status === "active"
      ? h(
          "button",
          {
            type: "button",
            class: "danger",
            "aria-label": `Revoke key ${k.name || k.prefix}`,
            onclick: async () => {
              try {
                await api("DELETE", `/api/admin/accounts/${d.account.id}/keys/${k.id}`);
                await refresh();
              } catch (e) {
                msg.fail(e);
              }
            },
          },
          "Revoke",
        )
      : "";
  return table(
    "Keys",
    ["Name", "Prefix", "Status", "Spent", "Last used", ""],
    d.keys.map((k) => [truncated(k.name || "—"), h("code", {}, k.prefix), k.status, usd(k.spent_usd), when(k.last_used_at), revoke(k)]),
    "No keys.",
    { oneLine: true, numeric: [3] },
  );
}

function noteForm(id: number, note: AdminNote, msg: ReturnType<typeof messages>): HTMLElement {
  const text = h("textarea", { name: "note", maxlength: 2000, rows: 2, cols: 40 }, note.note ?? "");
  const said = h("small", { class: "hint" }, note.updated_at ? `Last changed ${when(note.updated_at)} by ${note.updated_by ?? "an operator"}.` : "No note yet.");
  const form = h("form", { "aria-label": "Operator note", class: "inline" }, field("Note (operators only)", text), h("button", { type: "submit" }, "Save note"));
  onSubmit(form, msg, async (d) => {
    const saved = await api<AdminNote>("PUT", `/api/admin/accounts/${id}/note`, { note: String(d.get("note") ?? "") });
    said.textContent = saved.updated_at ? `Saved ${when(saved.updated_at)}.` : "Note removed.";
    msg.ok("Note saved.");
  });
  return h("div", {}, form, said);
}

/** The holder's dashboard password set by the operator: an account made without one, or a lost one. */
function passwordForm(id: number, msg: ReturnType<typeof messages>): HTMLElement {
  const form = h(
    "form",
    { "aria-label": "Set the dashboard password", class: "inline" },
    field("New password", input({ type: "password", name: "password", required: true, minlength: 8, maxlength: 1024, autocomplete: "new-password", size: 14 }), "The account's open sessions end."),
    h("button", { type: "submit" }, "Set password"),
  );
  onSubmit(form, msg, async (d) => {
    const done = await api<PasswordChanged>("PUT", `/api/admin/accounts/${id}/password`, { password: String(d.get("password") ?? "") });
    form.reset();
    msg.ok(`Password set; ${done.sessions_ended} session${done.sessions_ended === 1 ? "" : "s"} ended.`);
  });
  return form;
}

function newKeyForm(id: number, msg: ReturnType<typeof messages>, shown: HTMLElement, refresh: () => Promise<void>): HTMLElement {
  const form = h("form", { "aria-label": "Create a key for this account", class: "inline" }, field("Key name", input({ name: "name", maxlength: 100, size: 14 })), h("button", { type: "submit" }, "Create key"));
  onSubmit(form, msg, async (d) => {
    const made = await api<NewKeyView>("POST", `/api/admin/accounts/${id}/keys`, { name: String(d.get("name") ?? "") });
    form.reset();
    // In place, not a reload: the key is in this answer only.
    shown.replaceChildren(h("div", { class: "once" }, h("p", { role: "status" }, `Key ${made.name || made.prefix}: shown only now, give it to the holder.`), copyBlock(made.key, "Key")));
    await refresh();
  });
  return form;
}

export async function adminAccountView(ctx: Ctx): Promise<HTMLElement> {
  const id = ctx.params.get("id")!;
  const d = await detailOf(id);
  const a = d.account;
  const msg = messages();
  const keys = h("div", {});
  const refresh = async (): Promise<void> => keys.replaceChildren(keysTable(await detailOf(id), msg, refresh));
  keys.replaceChildren(keysTable(d, msg, refresh));
  const shown = h("div", {});
  return h(
    "section",
    {},
    h("p", {}, h("a", { href: "#/admin" }, "← Admin")),
    heading(a.email),
    msg.el,
    h(
      "dl",
      { class: "figures" },
      h("div", { class: "figure" }, h("dt", {}, "Balance"), h("dd", { "data-testid": `balance-${a.id}` }, usd(a.balance_usd))),
      h("div", { class: "figure" }, h("dt", {}, "Held by running requests"), h("dd", {}, usd(a.held_usd))),
      h("div", { class: "figure" }, h("dt", {}, "Spent this month"), h("dd", {}, usd(a.spent_month_usd))),
      h("div", { class: "figure" }, h("dt", {}, "State"), h("dd", { "data-testid": "account-state" }, `${a.closed ? "closed by its holder" : a.disabled ? "disabled" : "active"}${a.admin ? " · admin" : ""}`)),
    ),
    h("p", { class: "muted" }, `Account ${a.id}, created ${when(a.created_at)}; last request ${when(a.last_activity_at)}.`),
    h("div", { class: "actions" }, moneyForm(ctx, a, msg), accountSwitch(ctx, a, msg)),
    h("h2", {}, "Note"),
    noteForm(a.id, d.note, msg),
    // A closed account has no holder left to log in or to use a key: the server refuses both (409 account_closed).
    ...(a.closed
      ? [h("p", { class: "muted", "data-testid": "closed-note" }, "Closed by its holder: no password can be set and no key made; a debit can still correct money that reached it after the closure.")]
      : [h("h2", {}, "Dashboard password"), passwordForm(a.id, msg)]),
    h("h2", {}, "Keys"),
    a.closed ? null : newKeyForm(a.id, msg, shown, refresh),
    shown,
    keys,
    table(
      "Recent requests",
      ["Time", "Model", "Status", "Cost", "Latency"],
      d.requests.map((r) => [when(r.created_at), truncated(r.model ?? "—"), r.error_code ? `${r.status} ${r.error_code}` : String(r.status), usd(r.cost_usd), `${r.latency_ms} ms`]),
      "No requests yet.",
      { oneLine: true, numeric: [2, 3, 4] },
    ),
    table(
      "Ledger",
      ["Time", "Kind", "Amount", "Note"],
      d.ledger.map((e) => [when(e.created_at), "count" in e ? `charges (${e.count} on ${e.day})` : e.kind, usd(e.amount_usd), "note" in e ? truncated(e.note ?? "") : ""]),
      "No entries.",
      { oneLine: true, numeric: [2] },
    ),
  );
}
