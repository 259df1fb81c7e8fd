import { Type as T } from "@sinclair/typebox";
import { checkLogin } from "../../auth/credentials.ts";
import { GatewayError, invalidRequest } from "../../core/errors.ts";
import { nanoToUsd, usdToNano } from "../../core/money.ts";
import { isoTime } from "../../core/time.ts";
import type { AccountClosed } from "../api-schemas.ts";
import { json } from "../exchange.ts";
import { sessionCookie, type SessionCall } from "../session-guard.ts";
import { throttledCheck } from "./dashboard-login.ts";

// POST /api/me/close (docs/dashboard.md#closing-the-account): the holder closes the account for good.
// The store's closure is one transaction (the forfeit entry, the row disabled, marked closed and
// anonymised); the keys, sessions, emailed links and two-factor rows are ended after it (each by its
// own store), though the disabled row already refuses keys and sessions, and a link's use the row's state.

export const CloseBody = T.Object(
  {
    password: T.String({ maxLength: 1024 }),
    /** The account's email address, typed again: no stray click or replayed form closes an account. */
    confirm: T.String({ maxLength: 320 }),
    /** The balance the holder agrees to forfeit, exactly as GET /api/me shows it; absent: 0. */
    forfeit_usd: T.Optional(T.Union([T.Number(), T.String({ maxLength: 40 })])),
  },
  { additionalProperties: false },
);

function forfeitOf(given: number | string | undefined): number {
  if (given === undefined) return 0;
  try {
    return usdToNano(given);
  } catch (e) {
    throw invalidRequest(`forfeit_usd: ${(e as Error).message}`);
  }
}

export async function closeAccount(c: SessionCall): Promise<Response> {
  const { svc } = c;
  const accountId = c.session!.accountId;
  const body = c.json as { password: string; confirm: string; forfeit_usd?: number | string };
  const profile = (await svc.accounts.profileOf(accountId))!;
  if (body.confirm.trim().toLowerCase() !== profile.email) throw invalidRequest("confirm: type the account's email address to close it.");
  const forfeitNano = forfeitOf(body.forfeit_usd);
  if (profile.admin) {
    throw new GatewayError("admin_account", "An admin account cannot be closed from the dashboard: the operator first takes its admin mark away (gateway account update --email E --no-admin).");
  }
  const t = c.dash.throttles;
  const failure = await t.loginPerAccount.take(profile.email, "failed logins for this account");
  await throttledCheck(t.loginPerAccount, failure, () => checkLogin(svc.accounts, profile.email, body.password));
  const now = Date.now();
  const closed = await svc.accounts.close(accountId, forfeitNano, now);
  // Credentials and pending links are not needed for the books: a reset or change-of-address link
  // mailed before, or a login waiting for its code, opens nothing now; a secret outlives no account.
  await svc.links.forget(accountId);
  await svc.twoFactor.remove(accountId);
  let revoked = 0;
  for (const key of await svc.keys.ofAccount(accountId)) if (await svc.keys.revoke(key.id, now)) revoked++;
  const ended = await c.dash.sessions.revokeAll(accountId);
  await svc.audit.record({ actorAccountId: accountId, action: "account_closed", targetAccountId: accountId, detail: `forfeited ${nanoToUsd(forfeitNano)} USD, ${revoked} keys revoked` });
  svc.notices.closed(closed);
  return json<AccountClosed>(
    { object: "account", id: accountId, closed: true, closed_at: isoTime(now)!, forfeited_usd: nanoToUsd(forfeitNano), keys_revoked: revoked, sessions_ended: ended },
    200,
    { "set-cookie": sessionCookie(svc, c.request, null) },
  );
}
