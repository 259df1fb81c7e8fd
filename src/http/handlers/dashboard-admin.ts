import { Type as T } from "@sinclair/typebox";
import { GatewayError, invalidRequest } from "../../core/errors.ts";
import { formatUsd, nanoToUsd, usdToNano } from "../../core/money.ts";
import { alreadyClosed, type Account } from "../../store/accounts/contract.ts";
import type { Services } from "../../services.ts";
import type { SessionCall } from "../session-guard.ts";
import { idempotent } from "../idempotency.ts";
import { limitParam, queryOf } from "./dashboard-usage.ts";
import { json, pathParam } from "../exchange.ts";
import { routeHealth } from "./public.ts";
import { isoTime } from "../../core/time.ts";
import type { AdminAccount, AdminAccountList, AdminStatus, AuditList, PauseState } from "../api-schemas.ts";

// The operator's side of the dashboard (docs/dashboard.md, Admin): a session of an account marked
// admin (`gateway account create --admin`). Every action leaves who did it behind: money as a ledger
// entry (operator_credit, operator_debit) and an audit row, everything else as an audit row.

/**
 * The body of a credit or a debit. The path names the direction; a body that also names one (the
 * dashboard always does) must name the same, so a client that meant the other way is refused and
 * moves nothing rather than moving money the wrong way (docs/dashboard.md#admin).
 */
const moneyBody = (op: "credit" | "debit") =>
  T.Object({ op: T.Optional(T.Literal(op)), usd: T.Union([T.Number(), T.String()]), note: T.Optional(T.String({ maxLength: 500 })) }, { additionalProperties: false });
export const CreditBody = moneyBody("credit");
export const DebitBody = moneyBody("debit");

type Handler = (c: SessionCall, adminId: number) => Promise<Response>;

/** The handler, for an admin's session only: any other session is 403 admin, and nothing happens. */
export const adminOnly =
  (h: Handler) =>
  async (c: SessionCall): Promise<Response> => {
    const accountId = c.session!.accountId;
    if (!(await c.svc.accounts.profileOf(accountId))?.admin) {
      throw new GatewayError("admin", "This route is the operator's: this account is not an admin (gateway account update --email E --admin).");
    }
    return h(c, accountId);
  };

const monthStart = (now = new Date()) => Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);

/** Accounts as the admin page lists them; held is what the running requests hold (on every instance). */
export async function accountViews(svc: Services, list: Account[]): Promise<AdminAccount[]> {
  const [keys, charged, last, balances, twoFactor] = await Promise.all([
    svc.keys.countsByAccount(),
    svc.accounts.chargedSince(list.map((a) => a.id), monthStart()),
    svc.reports.lastRequestByAccount(),
    Promise.all(list.map((a) => svc.ledger.balance(a.id))),
    svc.twoFactor.enabledAmong(list.map((a) => a.id)),
  ]);
  return list.map((a, i) => ({
    object: "account",
    id: a.id,
    email: a.email,
    admin: a.admin,
    disabled: a.disabledAt !== null,
    two_factor: twoFactor.has(a.id),
    closed: a.closedAt !== null,
    balance_usd: nanoToUsd(a.balanceNano),
    held_usd: nanoToUsd(balances[i]!.reservedNano),
    keys: keys.get(a.id)?.keys ?? 0,
    spent_month_usd: nanoToUsd(charged.get(a.id) ?? 0),
    last_activity_at: isoTime(last.get(a.id)),
    created_at: isoTime(a.createdAt),
  }));
}

export async function targetOf(c: SessionCall): Promise<Account> {
  const given = pathParam(c, "id");
  const account = /^\d{1,15}$/.test(given) ? await c.svc.accounts.findById(Number(given)) : null;
  if (!account) throw new GatewayError("account_not_found", `No account with id ${given}.`);
  return account;
}

/** The target, unless its holder closed it: an admin's credit, enable, password or key would reach no one (closure is final). */
export async function openTargetOf(c: SessionCall): Promise<Account> {
  const target = await targetOf(c);
  if (target.closedAt !== null) throw alreadyClosed(target.id);
  return target;
}

export const accountAnswer = async (svc: Services, id: number) => json<AdminAccount>((await accountViews(svc, [(await svc.accounts.findById(id))!]))[0]!);

/** `offset` of GET /api/admin/accounts: a whole number, 0 when absent. */
function offsetParam(q: URLSearchParams): number {
  const text = q.get("offset") ?? "0";
  if (!/^\d{1,9}$/.test(text)) throw invalidRequest(`offset: a whole number from 0, not '${text}'`);
  return Number(text);
}

/** One page of the accounts whose email contains `q`, or whose id is `q` (docs/dashboard.md#admin); every account without `q`. */
export const listAdminAccounts = adminOnly(async (c) => {
  const q = queryOf(c, ["q", "offset", "limit"]);
  const text = q.get("q") ?? "";
  if (text.length > 320) throw invalidRequest("q: at most 320 characters (part of an email, or an account id)");
  const offset = offsetParam(q);
  const page = await c.svc.adminQueries.searchAccounts(text, offset, limitParam(q));
  return json<AdminAccountList>({ object: "list", data: await accountViews(c.svc, page.accounts), total: page.total, offset });
});

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

// Idempotent (http/idempotency.ts): a retried credit or debit with its Idempotency-Key moves the money once.
export const creditAccount = adminOnly(idempotent(async (c, adminId: number) => {
  const target = await openTargetOf(c);
  const { nano, note } = amountOf(c, false);
  await c.svc.ledger.credit(target.id, nano, "operator_credit", note);
  c.svc.notices.credited(target.id, nano, "operator_credit");
  await c.svc.audit.record({ actorAccountId: adminId, action: "account_credited", targetAccountId: target.id, detail: moneyDetail(nano, note) });
  return accountAnswer(c.svc, target.id);
}));

export const debitAccountRoute = adminOnly(idempotent(async (c, adminId: number) => {
  const target = await targetOf(c);
  const { nano, note } = amountOf(c, true);
  await c.svc.accounts.debit(target.id, nano, note!);
  await c.svc.audit.record({ actorAccountId: adminId, action: "account_debited", targetAccountId: target.id, detail: moneyDetail(nano, note) });
  return accountAnswer(c.svc, target.id);
}));

const switchAccount = (disable: boolean) =>
  adminOnly(async (c, adminId) => {
    const target = await openTargetOf(c);
    // An admin who disables itself is locked out of the page that would undo it.
    if (disable && target.id === adminId) throw invalidRequest("An admin cannot disable its own account; another admin or `gateway account disable` can.");
    if (await c.svc.accounts.setDisabled(target.id, disable)) {
      // Sessions opened before the disable stay ended, and logins waiting for their code: enabling must not bring back a stolen one.
      if (!disable) {
        await c.dash.sessions.revokeAll(target.id);
        await c.svc.twoFactor.endChallenges(target.id);
      }
      await c.svc.audit.record({ actorAccountId: adminId, action: disable ? "account_disabled" : "account_enabled", targetAccountId: target.id });
    }
    return accountAnswer(c.svc, target.id);
  });

export const disableAccount = switchAccount(true);
export const enableAccount = switchAccount(false);

const switchProduct = (paused: boolean) =>
  adminOnly(async (c, adminId) => {
    await c.svc.settings.setPaused(paused);
    await c.svc.audit.record({ actorAccountId: adminId, action: paused ? "product_paused" : "product_resumed" });
    return json<PauseState>({ paused });
  });

export const pauseProduct = switchProduct(true);
export const resumeProduct = switchProduct(false);

export const adminStatus = adminOnly(async (c) => {
  const instances = (await c.svc.ledger.instances()).map((i) => ({
    id: i.id,
    heartbeat_at: isoTime(i.heartbeatAt),
    holds: i.holds,
    held_usd: nanoToUsd(i.heldNano),
    last_reload: i.lastReload && { at: isoTime(i.lastReload.at), reloaded: i.lastReload.reloaded, error: i.lastReload.error, catalog_version: i.lastReload.catalogVersion, needs_restart: i.lastReload.needsRestart },
  }));
  return json<AdminStatus>({ paused: c.svc.settings.paused, instance: c.svc.ledger.instanceId, instances, routes: routeHealth(c.svc) });
});

export const listAudit = adminOnly(async (c) => {
  const limit = limitParam(queryOf(c, ["limit"]));
  const rows = await c.svc.audit.recent(limit);
  const emails = new Map<number, string | null>();
  for (const id of rows.flatMap((a) => [a.actorAccountId, a.targetAccountId])) {
    if (id !== null && !emails.has(id)) emails.set(id, (await c.svc.accounts.findById(id))?.email ?? null);
  }
  const email = (id: number | null) => (id === null ? null : emails.get(id)!);
  const data = rows.map((a) => ({
    actor_email: email(a.actorAccountId),
    action: a.action,
    target: email(a.targetAccountId),
    detail: a.detail,
    created_at: new Date(a.createdAt).toISOString(),
  }));
  return json<AuditList>({ object: "list", data });
});
