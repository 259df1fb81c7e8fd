import { Type as T } from "@sinclair/typebox";
import { GatewayError, invalidRequest } from "../core/errors.ts";
import { formatUsd, nanoToUsd, usdToNano } from "../core/money.ts";
import { chargedSince, debitAccount, findAccountById, listAccounts, profileOf, setAccountDisabled, type Account } from "../ledger/accounts.ts";
import { recentAudit, recordAudit } from "../logs/audit.ts";
import { lastRequestByAccount } from "../logs/queries.ts";
import type { Services } from "../services.ts";
import type { SessionCall } from "./api-guard.ts";
import { limitParam, queryOf } from "./api-usage.ts";
import { pathParam } from "./exchange.ts";
import { json, routeHealth } from "./public-endpoints.ts";
import { isoTime } from "../core/time.ts";

// The operator's side of the dashboard (docs/dashboard.md, Admin): a session of an account marked
// admin (`gateway account create --admin`). Every action leaves who did it behind: money as a ledger
// entry (operator_credit, operator_debit) and an audit row, everything else as an audit row.

export const Amount = T.Object({ usd: T.Union([T.Number(), T.String()]), note: T.Optional(T.String({ maxLength: 500 })) }, { additionalProperties: false });

type Handler = (c: SessionCall, adminId: number) => Response;

/** The handler, for an admin's session only: any other session is 403 admin, and nothing happens. */
const adminOnly =
  (h: Handler) =>
  (c: SessionCall): Response => {
    const accountId = c.session!.accountId;
    if (!profileOf(c.svc.db, accountId)?.admin) {
      throw new GatewayError("admin", "This route is the operator's: this account is not an admin (gateway account update --email E --admin).");
    }
    return h(c, accountId);
  };

const monthStart = (now = new Date()) => Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);

/** Accounts as the admin page lists them; holds are the running requests' (this process's memory). */
function accountViews(svc: Services, list: Account[]) {
  const keys = svc.keys.countsByAccount();
  const charged = chargedSince(svc.db, list.map((a) => a.id), monthStart());
  const last = lastRequestByAccount(svc.db);
  return list.map((a) => ({
    object: "account",
    id: a.id,
    email: a.email,
    admin: a.admin,
    disabled: a.disabledAt !== null,
    balance_usd: nanoToUsd(a.balanceNano),
    held_usd: nanoToUsd(svc.ledger.holds.account(a.id)),
    keys: keys.get(a.id)?.keys ?? 0,
    spent_month_usd: nanoToUsd(charged.get(a.id) ?? 0),
    last_activity_at: isoTime(last.get(a.id)),
    created_at: isoTime(a.createdAt),
  }));
}

function targetOf(c: SessionCall): Account {
  const given = pathParam(c, "id");
  const account = /^\d{1,15}$/.test(given) ? findAccountById(c.svc.db, Number(given)) : null;
  if (!account) throw new GatewayError("account_not_found", `No account with id ${given}.`);
  return account;
}

const accountAnswer = (svc: Services, id: number) => json(accountViews(svc, [findAccountById(svc.db, id)!])[0]);

export const listAdminAccounts = adminOnly((c) => json({ object: "list", data: accountViews(c.svc, listAccounts(c.svc.db)) }));

/** The amount and note of a credit or debit; a debit must say why, as `gateway account debit` does. */
function amountOf(c: SessionCall, noteRequired: boolean): { nano: number; note: string | null } {
  const { usd, note } = c.json as { usd: number | string; note?: string };
  let nano: number;
  try {
    nano = usdToNano(usd);
  } catch {
    nano = 0;
  }
  if (nano <= 0) throw invalidRequest(`usd: a USD amount above 0 with at most 9 decimals, not ${JSON.stringify(usd)}`);
  const text = note?.trim() || null;
  if (noteRequired && !text) throw invalidRequest("note: a debit needs a note saying why");
  return { nano, note: text };
}

const moneyDetail = (nano: number, note: string | null) => `${formatUsd(nano)} USD${note ? `: ${note}` : ""}`;

export const creditAccount = adminOnly((c, adminId) => {
  const target = targetOf(c);
  const { nano, note } = amountOf(c, false);
  c.svc.ledger.credit(target.id, nano, "operator_credit", note);
  recordAudit(c.svc.db, { actorAccountId: adminId, action: "account_credited", targetAccountId: target.id, detail: moneyDetail(nano, note) });
  return accountAnswer(c.svc, target.id);
});

export const debitAccountRoute = adminOnly((c, adminId) => {
  const target = targetOf(c);
  const { nano, note } = amountOf(c, true);
  debitAccount(c.svc.db, target.id, nano, note!);
  recordAudit(c.svc.db, { actorAccountId: adminId, action: "account_debited", targetAccountId: target.id, detail: moneyDetail(nano, note) });
  return accountAnswer(c.svc, target.id);
});

const switchAccount = (disable: boolean) =>
  adminOnly((c, adminId) => {
    const target = targetOf(c);
    // An admin who disables itself is locked out of the page that would undo it.
    if (disable && target.id === adminId) throw invalidRequest("An admin cannot disable its own account; another admin or `gateway account disable` can.");
    if (setAccountDisabled(c.svc.db, target.id, disable)) {
      recordAudit(c.svc.db, { actorAccountId: adminId, action: disable ? "account_disabled" : "account_enabled", targetAccountId: target.id });
    }
    return accountAnswer(c.svc, target.id);
  });

export const disableAccount = switchAccount(true);
export const enableAccount = switchAccount(false);

const switchProduct = (paused: boolean) =>
  adminOnly((c, adminId) => {
    c.svc.settings.setPaused(paused);
    recordAudit(c.svc.db, { actorAccountId: adminId, action: paused ? "product_paused" : "product_resumed" });
    return json({ paused });
  });

export const pauseProduct = switchProduct(true);
export const resumeProduct = switchProduct(false);

export const adminStatus = adminOnly((c) => json({ paused: c.svc.settings.paused, routes: routeHealth(c.svc) }));

export const listAudit = adminOnly((c) => {
  const limit = limitParam(queryOf(c, ["limit"]));
  const emails = new Map<number, string | null>();
  const email = (id: number | null) => {
    if (id === null) return null;
    if (!emails.has(id)) emails.set(id, findAccountById(c.svc.db, id)?.email ?? null);
    return emails.get(id)!;
  };
  const data = recentAudit(c.svc.db, limit).map((a) => ({
    actor_email: email(a.actorAccountId),
    action: a.action,
    target: email(a.targetAccountId),
    detail: a.detail,
    created_at: new Date(a.createdAt).toISOString(),
  }));
  return json({ object: "list", data });
});
