import { api } from "../api.ts";
import type { Ctx } from "../context.ts";
import { field, h, heading, input, messages, onSubmit, table, usd, when } from "../dom.ts";
import type { AdminAccount, AdminAccountList, AdminStatus, AuditList, AuditRow } from "../../../http/api-schemas.ts";
import { codesSection } from "./admin-codes.ts";
import { upstreamsPanel } from "./admin-upstreams.ts";

// The operator's page: accounts with their money and activity, credit or debit with a note (after a
// confirmation), disable, pause and resume, route health, and the audit trail of these actions.

const AMOUNT = new Intl.NumberFormat("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 9 });

function moveOf(d: FormData): { op: "credit" | "debit"; usd: number; note: string } {
  const op = d.get("op");
  if (op !== "credit" && op !== "debit") throw new Error("Choose Credit or Debit.");
  return { op, usd: Number(d.get("usd")), note: String(d.get("note")) };
}

/**
 * Credit or debit: the direction is a required choice of its own, never read from which button was
 * pressed or guessed when absent, and a dialog states amount and direction before the money moves.
 */
function moneyForm(ctx: Ctx, a: AdminAccount, msg: ReturnType<typeof messages>): HTMLElement {
  const op = (value: string, label: string) => h("label", { class: "check" }, input({ type: "radio", name: "op", value, required: true }), ` ${label}`);
  const form = h(
    "form",
    { "aria-label": `Credit or debit ${a.email}`, class: "inline" },
    h("fieldset", { class: "op" }, h("legend", {}, "Direction"), op("credit", "Credit"), op("debit", "Debit")),
    field("USD", input({ type: "number", name: "usd", min: "0.01", step: "0.01", required: true, inputmode: "decimal", size: 6 })),
    field("Note", input({ name: "note", required: true, maxlength: 200, size: 14 })),
    h("button", { type: "submit" }, "Review"),
  );
  onSubmit(
    form,
    msg,
    async (d) => {
      const { op, usd, note } = moveOf(d);
      await api<AdminAccount>("POST", `/api/admin/accounts/${a.id}/${op}`, { op, usd, note });
      ctx.reload();
    },
    (d) => {
      const { op, usd, note } = moveOf(d);
      const amount = `${AMOUNT.format(usd)} USD`;
      const [verb, way] = op === "debit" ? ["Debit", "from"] : ["Credit", "to"];
      return { question: `${verb} ${amount} ${way} ${a.email}? Note: ${note}`, yes: `${verb} ${amount}` };
    },
  );
  return form;
}

function switchButton(ctx: Ctx, label: string, path: string, msg: ReturnType<typeof messages>, danger = false): HTMLButtonElement {
  return h(
    "button",
    {
      type: "button",
      class: danger ? "danger" : null,
      onclick: async () => {
        try {
          await api("POST", path);
          ctx.reload();
        } catch (e) {
          msg.fail(e);
        }
      },
    },
    label,
  );
}

function routeRows(status: AdminStatus) {
  return status.routes.flatMap((m) =>
    m.routes.map((r) => [h("code", {}, m.id), r.route, r.state, `${r.successes} ok / ${r.failures} failed`, r.last_error ?? "", when(r.last_failure_at)]),
  );
}

export async function adminView(ctx: Ctx): Promise<HTMLElement> {
  const [accounts, status, audit, codes] = await Promise.all([
    api<AdminAccountList>("GET", "/api/admin/accounts"),
    api<AdminStatus>("GET", "/api/admin/status"),
    api<AuditList>("GET", "/api/admin/audit?limit=50"),
    codesSection(),
  ]);
  const msg = messages();
  const rows = accounts.data.map((a) => [
    a.email + (a.admin ? " (admin)" : ""),
    h("span", { "data-testid": `balance-${a.id}` }, usd(a.balance_usd)),
    usd(a.held_usd),
    String(a.keys),
    usd(a.spent_month_usd),
    when(a.last_activity_at),
    a.disabled ? "disabled" : "active",
    h(
      "div",
      { class: "actions" },
      moneyForm(ctx, a, msg),
      a.disabled
        ? switchButton(ctx, "Enable", `/api/admin/accounts/${a.id}/enable`, msg)
        : switchButton(ctx, `Disable ${a.email}`, `/api/admin/accounts/${a.id}/disable`, msg, true),
    ),
  ]);
  return h(
    "section",
    {},
    heading("Admin"),
    msg.el,
    h("h2", {}, "Product"),
    h(
      "p",
      {},
      status.paused ? "Paused: every model request gets 503 product_paused. " : "Serving. ",
      status.paused ? switchButton(ctx, "Resume", "/api/admin/resume", msg) : switchButton(ctx, "Pause", "/api/admin/pause", msg, true),
    ),
    table("Accounts", ["Email", "Balance", "Held", "Keys", "Spent this month", "Last activity", "State", "Actions"], rows, "No accounts."),
    codes,
    table("Route health", ["Model", "Route", "State", "Calls", "Last error", "Last failure"], routeRows(status), "No routes."),
    upstreamsPanel(),
    table(
      "Audit",
      ["Time", "Who", "Action", "Target", "Detail"],
      audit.data.map((r) => [when(r.created_at), r.actor_email ?? "—", r.action, r.target ?? "", r.detail ?? ""]),
      "No admin actions yet.",
    ),
  );
}
