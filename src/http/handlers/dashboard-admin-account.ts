import { Type as T } from "@sinclair/typebox";
import { checkNewPassword, hashPassword } from "../../auth/passwords.ts";
import { GatewayError, invalidRequest } from "../../core/errors.ts";
import { formatUsd, usdToNano } from "../../core/money.ts";
import { isoTime } from "../../core/time.ts";
import type { Services } from "../../services.ts";
import type { KeyRow } from "../../store/keys/contract.ts";
import type { SessionCall } from "../session-guard.ts";
import { json, pathParam } from "../exchange.ts";
import type { AdminAccount, AdminAccountDetail, AdminNote, KeyView, NewKeyView, PasswordChanged } from "../api-schemas.ts";
import { accountViews, adminOnly, openTargetOf, targetOf } from "./dashboard-admin.ts";
import { keyView, rowView, sharedRules } from "./dashboard-keys.ts";
import { ledgerView, requestView } from "./dashboard-usage.ts";

// One account as the operator sees it (docs/dashboard.md#an-accounts-page): its money, keys, newest
// requests and ledger, and the operator's note; an account and a key made for someone. Every change
// is an audit row naming the admin; a new key's whole text is in its answer only, as the holder's own.

/** How many of its newest requests and ledger items the page shows. */
const RECENT = 20;

export const NoteBody = T.Object({ note: T.String({ maxLength: 2000 }) }, { additionalProperties: false });
export const NewAccountBody = T.Object(
  {
    email: T.String({ minLength: 1, maxLength: 320 }),
    /** Absent: the account has no password until the operator sets one (PUT …/password, `gateway account update --password-stdin`); keys work without. */
    password: T.Optional(T.String()),
    balance_usd: T.Optional(T.Union([T.Number(), T.String()])),
  },
  { additionalProperties: false },
);

export const PasswordBody = T.Object({ password: T.String() }, { additionalProperties: false });

async function noteView(svc: Services, accountId: number): Promise<AdminNote> {
  const n = await svc.adminQueries.noteOf(accountId);
  if (!n) return { note: null, updated_at: null, updated_by: null };
  return { note: n.note, updated_at: isoTime(n.updatedAt), updated_by: n.updatedBy === null ? null : ((await svc.accounts.findById(n.updatedBy))?.email ?? null) };
}

export const getAdminAccount = adminOnly(async (c) => {
  const target = await targetOf(c);
  const svc = c.svc;
  const keys = await svc.keys.ofAccount(target.id);
  const [[account], note, lastUsed, requests, ledger] = await Promise.all([
    accountViews(svc, [target]),
    noteView(svc, target.id),
    svc.reports.lastUsedByKey(keys.map((k) => k.id)),
    svc.reports.keysPage(keys.map((k) => k.id), { accountId: target.id }, null, RECENT),
    (async () => svc.accounts.statementPage(target.id, await svc.accounts.newestLedgerId(), null, RECENT))(),
  ]);
  const names = new Map(keys.map((k) => [k.id, k.name]));
  return json<AdminAccountDetail>({
    account: account!,
    note,
    keys: await Promise.all(keys.map((k) => keyView(svc, k, lastUsed))),
    requests: requests.map((r) => requestView(r, names)),
    ledger: ledger.map(ledgerView),
  });
});

export const putNote = adminOnly(async (c, adminId) => {
  const target = await targetOf(c);
  const note = (c.json as { note: string }).note.trim();
  await c.svc.adminQueries.setNote(target.id, note, adminId);
  await c.svc.audit.record({ actorAccountId: adminId, action: note ? "account_note_set" : "account_note_removed", targetAccountId: target.id, detail: note || null });
  return json<AdminNote>(await noteView(c.svc, target.id));
});

/**
 * The operator sets an account's password: the login of an account made without one, or a new one for
 * a holder who lost theirs. Every session of the account ends (whoever held the old password is out),
 * except the admin's own when the account is theirs.
 */
export const setPasswordOf = adminOnly(async (c, adminId) => {
  const target = await openTargetOf(c);
  const { password } = c.json as { password: string };
  checkNewPassword(password);
  await c.svc.accounts.setPasswordHash(target.id, await hashPassword(password));
  const ended = await c.dash.sessions.revokeAll(target.id, target.id === adminId ? c.session!.id : null);
  // A reset link or a change of address asked with the old password opens nothing now.
  await c.svc.links.cancelAll(target.id, Date.now());
  await c.svc.twoFactor.endChallenges(target.id);
  await c.svc.audit.record({ actorAccountId: adminId, action: "password_set", targetAccountId: target.id });
  return json<PasswordChanged>({ password_changed: true, sessions_ended: ended });
});

/** An account made by the operator: no registration credit and no address check; an opening balance only when given. */
export const createAdminAccount = adminOnly(async (c, adminId) => {
  const { email, password, balance_usd } = c.json as { email: string; password?: string; balance_usd?: number | string };
  let balanceNano = 0;
  if (balance_usd !== undefined) {
    try {
      balanceNano = usdToNano(balance_usd);
    } catch {
      balanceNano = -1;
    }
    if (balanceNano < 0) throw invalidRequest(`balance_usd: a USD amount of 0 or more with at most 9 decimals, not ${JSON.stringify(balance_usd)}`);
  }
  if (password !== undefined) checkNewPassword(password);
  const passwordHash = password === undefined ? null : await hashPassword(password);
  const account = await c.svc.accounts.create(email, { passwordHash, balanceNano, kind: "operator_credit" });
  await c.svc.audit.record({ actorAccountId: adminId, action: "account_created", targetAccountId: account.id, detail: `${account.email}${balanceNano ? `, opening balance ${formatUsd(balanceNano)} USD` : ""}` });
  const [view] = await accountViews(c.svc, [account]);
  return json<AdminAccount>(view!, 201);
});

/** A key for the account of the path, with the operator's rules (no per-account cap, as `gateway key create`). */
export const createKeyFor = adminOnly(async (c, adminId) => {
  const target = await openTargetOf(c);
  const { key, record } = await c.svc.keys.create(target.id, sharedRules(c.svc, c.json));
  await c.svc.audit.record({ actorAccountId: adminId, action: "key_created", targetAccountId: target.id, detail: `key ${record.id} (${record.prefix}) ${record.name}`.trim() });
  return json<NewKeyView>({ ...(await rowView(c.svc, record.id)), key }, 201);
});

/** The key of the path, which must be the account's: any other is the same 404. */
async function keyOfTarget(c: SessionCall, accountId: number): Promise<KeyRow> {
  const given = pathParam(c, "key_id");
  const row = /^\d{1,15}$/.test(given) ? await c.svc.keys.row(Number(given)) : null;
  if (!row || row.accountId !== accountId) throw new GatewayError("key_not_found", `No key with id ${given} on account ${accountId}.`);
  return row;
}

export const revokeKeyOf = adminOnly(async (c, adminId) => {
  const target = await targetOf(c);
  const row = await keyOfTarget(c, target.id);
  if (await c.svc.keys.revoke(row.id)) {
    await c.svc.audit.record({ actorAccountId: adminId, action: "key_revoked", targetAccountId: target.id, detail: `key ${row.id} (${row.prefix}) ${row.name}`.trim() });
  }
  return json<KeyView>(await rowView(c.svc, row.id));
});

