import { Type as T } from "@sinclair/typebox";
import { changePassword, checkLogin, register as registerAccount } from "../../auth/credentials.ts";
import { newVerification } from "../../auth/email-verification.ts";
import { GatewayError, invalidRequest } from "../../core/errors.ts";
import { formatUsd, nanoToUsd, usdToNano } from "../../core/money.ts";
import { hashOrRefuse } from "../../payments/codes.ts";
import { throttleAddress } from "../../core/ip.ts";
import { secondFactorNeeded } from "./dashboard-two-factor.ts";
import { currentPasswordCheck, loggedIn, meView, throttledCheck } from "./dashboard-login.ts";
import { sessionCookie, type SessionCall } from "../session-guard.ts";
import { json } from "../exchange.ts";
import type { AccountView, LoggedOut, SessionState, LoggedOutAll, PasswordChanged } from "../api-schemas.ts";

// The account holder's /api/ (docs/dashboard.md): register, log in and out, the password, the
// account's money. The keys are dashboard-keys.ts's; the guard every dashboard endpoint passes is
// ../session-guard.ts, and the rows are in ../endpoints.ts.

export const Credentials = T.Object({ email: T.String({ minLength: 1, maxLength: 320 }), password: T.String() });
/** A registration: with `[dashboard] registration = "invite"`, an unused redemption code too. */
export const Registration = T.Object({ email: T.String({ minLength: 1, maxLength: 320 }), password: T.String(), code: T.Optional(T.String({ maxLength: 100 })) });
export const PasswordChange = T.Object({ current_password: T.String(), new_password: T.String() });
export const LowBalance = T.Object({ threshold_usd: T.Union([T.Number(), T.String(), T.Null()]) });

/**
 * The email and password of a register or login body, with the keys its throttles count by: the
 * client's address grouped as docs/dashboard.md#throttles says (an IPv6 /64), the email as stored.
 */
function credentialsOf(c: SessionCall) {
  const { email, password } = c.json as { email: string; password: string };
  return { email, password, ip: throttleAddress(c.clientIp() ?? "unknown"), who: email.trim().toLowerCase() };
}

export async function register(c: SessionCall): Promise<Response> {
  const { svc } = c;
  const t = c.dash.throttles;
  if (svc.config.dashboard.registration === "closed") {
    throw new GatewayError("registration_closed", "Registration is closed on this gateway; its operator creates accounts.");
  }
  const { email, password, ip, who } = credentialsOf(c);
  await t.registerPerIp.take(ip, "registrations from this address");
  await t.registerPerEmail.take(who, "registrations of this email");
  const code = (c.json as { code?: string }).code?.trim() || null;
  if (svc.config.dashboard.registration === "invite") return invitedRegistration(c, email, password, ip, code);
  if (code !== null) throw invalidRequest("code: registration on this gateway needs no code; register without it and redeem the code on the top-up page.");
  const { startingCreditNano, startingCreditDailyNano } = svc.config.dashboard;
  // Under [email] the starting credit waits for the address to be verified: a throwaway address gets nothing.
  const pending = svc.notices.verifiesEmail ? newVerification() : null;
  const acc = await registerAccount(svc.accounts, email, password, startingCreditNano, startingCreditDailyNano, { verification: pending?.stored });
  if (pending) svc.notices.verificationLink(acc.id, acc.email, pending.token, startingCreditNano);
  svc.notices.registered(acc.id, acc.email, acc.balanceNano, pending !== null);
  // The new account's balance is its starting credit: 0 when the day's registration credits are spent.
  const limited = !pending && startingCreditNano > 0 && acc.balanceNano === 0;
  return loggedIn(c, acc.id, 201, { starting_credit_usd: nanoToUsd(acc.balanceNano), starting_credit_limited: limited, verification_sent: pending !== null });
}

/**
 * `[dashboard] registration = "invite"`: the code is counted against the address's redemption
 * throttle before it is looked up (a refused code keeps the count, a good one gives it back), and
 * is redeemed in the new account's transaction: its value is the starting credit, one redemption
 * entry, outside the day's ceiling on starting credits (the operator minted it). A refused code
 * creates no account.
 */
async function invitedRegistration(c: SessionCall, email: string, password: string, ip: string, code: string | null): Promise<Response> {
  if (code === null) throw new GatewayError("code_required", "Registration on this gateway needs an invite code: ask the operator for one.");
  const t = c.dash.throttles;
  const attempt = await t.redeemPerIp.take(ip, "refused codes from this address");
  const acc = await registerAccount(c.svc.accounts, email, password, 0, 0, { invite: c.svc.codes.inviteClaim(hashOrRefuse(code)) });
  await t.redeemPerIp.refund(attempt);
  await c.svc.audit.record({ actorAccountId: acc.id, action: "code_redeemed", targetAccountId: acc.id, detail: `invite: ${formatUsd(acc.balanceNano)} USD` });
  return loggedIn(c, acc.id, 201, { starting_credit_usd: nanoToUsd(acc.balanceNano), starting_credit_limited: false, verification_sent: false });
}

export async function login(c: SessionCall): Promise<Response> {
  const t = c.dash.throttles;
  const { email, password, ip, who } = credentialsOf(c);
  await t.loginPerIp.take(ip, "login attempts from this address");
  const failure = await t.loginPerAccount.take(who, "failed logins for this account");
  const accountId = await throttledCheck(t.loginPerAccount, failure, () => checkLogin(c.svc.accounts, email, password));
  // The password alone opens no session of an account with two-factor login on: its code does.
  if ((await c.svc.twoFactor.stateOf(accountId))?.enabledAt != null) return secondFactorNeeded(c, accountId);
  return loggedIn(c, accountId, 200);
}

export async function logout(c: SessionCall): Promise<Response> {
  if (c.token) await c.dash.sessions.revoke(c.token);
  return json<LoggedOut>({ logged_out: true }, 200, { "set-cookie": sessionCookie(c.svc, c.request, null) });
}

export async function logoutAll(c: SessionCall): Promise<Response> {
  const ended = await c.dash.sessions.revokeAll(c.session!.accountId);
  return json<LoggedOutAll>({ logged_out: true, sessions_ended: ended }, 200, { "set-cookie": sessionCookie(c.svc, c.request, null) });
}

export async function newPassword(c: SessionCall): Promise<Response> {
  const { current_password, new_password } = c.json as { current_password: string; new_password: string };
  await currentPasswordCheck(c, () => changePassword(c.svc.accounts, c.session!.accountId, current_password, new_password));
  // Whoever else knew the old password is logged out; this browser stays in. A reset link asked
  // before is void (it was for the password replaced now), and so is a change of address: a thief
  // with the old password may have asked for one to a mailbox of theirs.
  const ended = await c.dash.sessions.revokeAll(c.session!.accountId, c.session!.id);
  await c.svc.links.cancelAll(c.session!.accountId, Date.now());
  await c.svc.twoFactor.endChallenges(c.session!.accountId);
  // On the audit trail as every other change of the account's credentials is (reset, set, two-factor, address).
  await c.svc.audit.record({ actorAccountId: c.session!.accountId, action: "password_changed", targetAccountId: c.session!.accountId, detail: `on the account page; sessions ended: ${ended}` });
  // Told by mail (under [email]) as a reset is: a session taken with the old password could change it.
  c.svc.notices.passwordChanged(c.session!.accountId, (await c.svc.accounts.profileOf(c.session!.accountId))!.email, "account page");
  return json<PasswordChanged>({ password_changed: true, sessions_ended: ended });
}

/**
 * GET /api/session: the account behind the cookie, or `logged_in: false` without a live session, so a
 * visitor's first page is answered 200 (docs/dashboard.md#routes). A disabled account's session
 * is refused as on every other route.
 */
export async function getSession(c: SessionCall): Promise<Response> {
  if (!c.session) return json<SessionState>({ logged_in: false, password_reset: c.svc.notices.verifiesEmail });
  if (c.session.accountDisabledAt !== null) throw new GatewayError("inactive", "This account is disabled by the operator.");
  return json<SessionState>({ logged_in: true, account: await meView(c.svc, c.session.accountId) });
}

export const getMe = async (c: SessionCall): Promise<Response> => json<AccountView>(await meView(c.svc, c.session!.accountId));

export async function putLowBalance(c: SessionCall): Promise<Response> {
  const given = (c.json as { threshold_usd: number | string | null }).threshold_usd;
  let nano: number | null;
  try {
    nano = given === null ? null : usdToNano(given);
  } catch (e) {
    throw new GatewayError("invalid_request", `threshold_usd: ${(e as Error).message}`);
  }
  await c.svc.accounts.setLowBalanceThreshold(c.session!.accountId, nano);
  return json<AccountView>(await meView(c.svc, c.session!.accountId));
}
