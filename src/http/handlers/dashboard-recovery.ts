import { Type as T } from "@sinclair/typebox";
import { hashVerifyToken, EMAIL_CHANGE_TTL_MS, newLinkToken, newVerification, RESEND_INTERVAL_MS, RESET_TTL_MS } from "../../auth/email-verification.ts";
import { checkNewPassword, hashPassword, verifyPassword } from "../../auth/passwords.ts";
import { throttleAddress } from "../../core/ip.ts";
import { events } from "../../core/events.ts";
import { GatewayError, invalidRequest } from "../../core/errors.ts";
import { normalizedEmail } from "../../core/email-address.ts";
import type { Services } from "../../services.ts";
import { alreadyClosed } from "../../store/accounts/contract.ts";
import type { EmailChange, PasswordReset, ResetRequested } from "../api-schemas.ts";
import { json } from "../exchange.ts";
import { throttledCheck } from "./dashboard-login.ts";
import type { SessionCall } from "../session-guard.ts";

// A forgotten password and a change of address (docs/dashboard.md#password-reset,
// docs/dashboard.md#change-of-email), by the emailed single-use links of store/links/ under [email].

export const ForgotBody = T.Object({ email: T.String({ minLength: 1, maxLength: 320 }) });
export const ResetBody = T.Object({ token: T.String({ minLength: 1, maxLength: 200 }), password: T.String() });
export const EmailChangeBody = T.Object({ new_email: T.String({ minLength: 1, maxLength: 320 }), password: T.String() });
export const EmailConfirmBody = T.Object({ token: T.String({ minLength: 1, maxLength: 200 }) });

const noEmail = () =>
  new GatewayError("email_not_configured", "This gateway sends no email, so it cannot send a reset link: ask its operator to set a new password.");

const deadResetLink = () =>
  new GatewayError("invalid_reset_token", "This reset link is not valid: it was used already, replaced by a newer one, or is more than 1 hour old. Ask for a new one on the login page.");

/**
 * POST /api/password/forgot: 202 and the same body for every address. What the address leads to (an
 * account, a link mailed or not) is worked out after the answer, so its time does not tell either.
 * The throttles count every request, known address or not, so a 429 tells nothing either.
 */
export async function forgotPassword(c: SessionCall): Promise<Response> {
  const { svc } = c;
  if (!svc.notices.verifiesEmail) throw noEmail();
  const t = c.dash.throttles;
  const email = (c.json as { email: string }).email.trim().toLowerCase();
  await t.forgotPerIp.take(throttleAddress(c.clientIp() ?? "unknown"), "password reset requests from this address");
  await t.forgotPerEmail.take(email, "password reset requests for this email");
  await t.linkMails.take("all", "password reset and address change emails on this gateway");
  // Begun on a later turn of the event loop: SQLite's statements answer at once, so a lookup begun
  // now would run before this answer is written, and its time would be in the answer's.
  const later = new Promise((r) => setImmediate(r)).then(() => mailResetLink(svc, email));
  svc.notices.deliveries.track(later.catch((e) => events.noticeFailed({ channel: "email", type: "password_reset", accountId: null, attempts: 0, reason: `the link was not made: ${(e as Error).message}` })));
  return json<ResetRequested>({ requested: true }, 202);
}

/**
 * Mails a reset link when the address is an enabled account's and verified (a registration's address
 * not verified yet may be someone else's); at most one a minute per account, the newest replacing the last.
 */
async function mailResetLink(svc: Services, email: string): Promise<void> {
  const acc = await svc.accounts.find(email);
  if (!acc || acc.disabledAt !== null) return;
  const verification = await svc.accounts.verificationOf(acc.id);
  if (verification && !verification.verified) return;
  const now = Date.now();
  const { token, stored } = newLinkToken(RESET_TTL_MS, now);
  if (!(await svc.links.issue(acc.id, "password_reset", stored, now, now - RESEND_INTERVAL_MS))) return;
  svc.notices.passwordResetLink(acc.id, acc.email, token);
}

/**
 * POST /api/password/reset: the link's account gets the new password, once. The link is looked at
 * before the Argon2id work (a dead link costs none) and used after it, in one conditional write, so
 * of two uses at once one sets the password. Every session ends, and every login waiting for its
 * second factor; a pending change of address ends too (whoever knew the old password may have asked for it).
 */
export async function resetPassword(c: SessionCall): Promise<Response> {
  const { svc } = c;
  if (!svc.notices.verifiesEmail) throw noEmail();
  const { token, password } = c.json as { token: string; password: string };
  checkNewPassword(password);
  const tokenHash = hashVerifyToken(token);
  const seen = await svc.links.peek(tokenHash, "password_reset", Date.now());
  if (!seen) throw deadResetLink();
  await refuseInactive(svc, seen.accountId);
  const hash = await hashPassword(password);
  const now = Date.now();
  const used = await svc.links.consume(tokenHash, "password_reset", now);
  if (!used) throw deadResetLink();
  await svc.accounts.setPasswordHash(used.accountId, hash);
  const ended = await c.dash.sessions.revokeAll(used.accountId);
  await svc.links.cancelAll(used.accountId, now);
  // A login past the old password, waiting for its code, would open a session the reset was meant to end.
  await svc.twoFactor.endChallenges(used.accountId);
  const profile = (await svc.accounts.profileOf(used.accountId))!;
  // The failed logins of the forgotten password no longer hold the new one back.
  await c.dash.throttles.loginPerAccount.clear(profile.email);
  await svc.audit.record({ actorAccountId: used.accountId, action: "password_reset", targetAccountId: used.accountId, detail: `by emailed link; sessions ended: ${ended}` });
  svc.notices.passwordChanged(used.accountId, profile.email);
  return json<PasswordReset>({ password_reset: true, sessions_ended: ended });
}

/** A link of a closed or disabled account opens nothing: its password and address stay as they are. */
async function refuseInactive(svc: Services, accountId: number): Promise<void> {
  const profile = await svc.accounts.profileOf(accountId);
  if (profile?.closedAt != null) throw alreadyClosed(accountId);
  if (!profile || profile.disabledAt !== null) throw new GatewayError("inactive", "This account is disabled by the operator.");
}

/**
 * POST /api/me/email: the current password, then under [email] a confirmation link to the new address
 * (the address changes when it is opened); without [email] nothing can confirm it, so the password
 * alone changes it at once. An address another account has is refused as registration refuses it.
 */
export async function requestEmailChange(c: SessionCall): Promise<Response> {
  const { svc } = c;
  const t = c.dash.throttles;
  const accountId = c.session!.accountId;
  const { new_email, password } = c.json as { new_email: string; password: string };
  const current = (await svc.accounts.profileOf(accountId))!.email;
  const next = normalizedEmail(new_email);
  if (next === current) throw invalidRequest("new_email: this is the account's address already.");
  const failure = await t.loginPerAccount.take(current, "failed logins for this account");
  await throttledCheck(t.loginPerAccount, failure, async () => {
    if (!(await verifyPassword(password, (await svc.accounts.loginOf(accountId))?.passwordHash ?? null))) {
      throw new GatewayError("invalid_credentials", "The current password is incorrect.");
    }
  });
  const taken = await svc.accounts.find(next);
  if (taken) throw new GatewayError("invalid_request", "An account with this email already exists.");
  if (!svc.notices.verifiesEmail) {
    await svc.accounts.setEmail(accountId, next);
    await svc.audit.record({ actorAccountId: accountId, action: "email_changed", targetAccountId: accountId, detail: "with the password (no [email] to confirm it)" });
    svc.notices.addressChanged(accountId, current, next);
    return json<EmailChange>({ email_changed: true, confirmation_sent: false, email: next });
  }
  const now = Date.now();
  const { token, stored } = newLinkToken(EMAIL_CHANGE_TTL_MS, now);
  await t.linkMails.take("all", "password reset and address change emails on this gateway");
  if (!(await svc.links.issue(accountId, "email_change", { ...stored, newEmail: next }, now, now - RESEND_INTERVAL_MS))) {
    throw new GatewayError("rate_limit", "A confirmation link was sent less than a minute ago; ask again in a minute.", { retryAfter: Math.ceil(RESEND_INTERVAL_MS / 1000) });
  }
  svc.notices.emailChangeLink(accountId, next, token);
  return json<EmailChange>({ email_changed: false, confirmation_sent: true, email: current });
}

/**
 * POST /api/me/email/confirm: the link's address becomes the account's, verified (it was just opened
 * from that mailbox). An account whose registration's address was never verified is verified now,
 * with its starting credit, as its own link would have done. The old address, if it was verified,
 * is told. Needs no session: the link may be opened on another device.
 */
export async function confirmEmailChange(c: SessionCall): Promise<Response> {
  const { svc } = c;
  const now = Date.now();
  const tokenHash = hashVerifyToken((c.json as { token: string }).token);
  const seen = await svc.links.peek(tokenHash, "email_change", now);
  if (seen) await refuseInactive(svc, seen.accountId);
  // A closure after the look deletes the link (this use finds none) or comes after the use (setEmail refuses a closed account).
  const used = seen && (await svc.links.consume(tokenHash, "email_change", now));
  if (!used?.newEmail) throw new GatewayError("invalid_email_change", "This confirmation link is not valid: it was used already, replaced by a newer one, or is more than 24 hours old. Ask again from the account page.");
  // A closure between the look and here: setEmail refuses the closed account (409 account_closed).
  const old = (await svc.accounts.profileOf(used.accountId))!.email;
  const verification = await svc.accounts.verificationOf(used.accountId);
  await svc.accounts.setEmail(used.accountId, used.newEmail);
  // A reset link mailed to the old address must not open the account any more.
  await svc.links.cancel(used.accountId, "password_reset", now);
  await svc.audit.record({ actorAccountId: used.accountId, action: "email_changed", targetAccountId: used.accountId, detail: "confirmed from the new address" });
  svc.notices.addressChanged(used.accountId, old, used.newEmail);
  if (verification && !verification.verified) await completeVerification(svc, used.accountId, now);
  else svc.notices.emailChanged(used.accountId, old, used.newEmail);
  return json<EmailChange>({ email_changed: true, confirmation_sent: false, email: used.newEmail });
}

/** The registration's pending check, completed through its own store path: a fresh link, used at once. */
async function completeVerification(svc: Services, accountId: number, now: number): Promise<void> {
  const { token, stored } = newVerification(now);
  if (!(await svc.accounts.renewVerification(accountId, stored, now, now))) return;
  const { startingCreditNano, startingCreditDailyNano } = svc.config.dashboard;
  const done = await svc.accounts.verifyEmail(hashVerifyToken(token), now, startingCreditNano, startingCreditDailyNano);
  if (done) svc.notices.verified(done);
}
