import { api } from "../api.ts";
import type { Ctx } from "../context.ts";
import { h, heading, messages, table, when } from "../dom.ts";
import type { AdminStatus, AuditList } from "../../../http/api-schemas.ts";
import { accountsSection } from "./admin-accounts.ts";
import { codesSection } from "./admin-codes.ts";
import { upstreamsPanel } from "./admin-upstreams.ts";

import { switchButton } from "./admin-money.ts";
import { totalsSection } from "./admin-totals.ts";

// The operator's page: the pause switch, the gateway's totals, the account search (each account's
// own page is admin-account.ts), redemption codes, route health, and the audit trail of admin actions.

function routeRows(status: AdminStatus) {
  return status.routes.flatMap((m) =>
    m.routes.map((r) => [h("code", {}, m.id), r.route, r.state, `${r.successes} ok / ${r.failures} failed`, r.last_error ?? "", when(r.last_failure_at)]),
  );
}

export async function adminView(ctx: Ctx): Promise<HTMLElement> {
  const [status, audit, totals, accounts, codes] = await Promise.all([
    api<AdminStatus>("GET", "/api/admin/status"),
    api<AuditList>("GET", "/api/admin/audit?limit=50"),
    totalsSection(),
    accountsSection(ctx),
    codesSection(),
  ]);
  const msg = messages();
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
    totals,
    accounts,
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
