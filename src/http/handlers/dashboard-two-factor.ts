import { Type as T } from "@sinclair/typebox";
import { checkCurrentPassword } from "../../auth/credentials.ts";
import { CHALLENGE_TTL_MS, issuerOf, newRecoveryCodes, newSecret, otpauthUri, qrCodeOf, spendFactor, totpStep, wrongCode, type FactorUsed } from "../../auth/two-factor.ts";
import { GatewayError } from "../../core/errors.ts";
import { throttleAddress } from "../../core/ip.ts";
import { isoTime } from "../../core/time.ts";
import { hashToken, newToken } from "../../store/sessions/contract.ts";
import type { TwoFactorState } from "../../store/two-factor/contract.ts";
import type { SessionCall } from "../session-guard.ts";
import { json } from "../exchange.ts";
import type { SecondFactorRequired, TwoFactorDisabled, TwoFactorEnabled, TwoFactorSetup } from "../api-schemas.ts";
import { currentPasswordCheck, loggedIn, throttledCheck } from "./dashboard-login.ts";

// Two-factor login (docs/dashboard.md#two-factor-login): the holder's setup, enable and disable, and
// the login's second step. The codes' arithmetic is auth/two-factor.ts's, the rows store/two-factor/'s.

// A code: six digits, or a recovery code (xxxx-xxxx-xxxx-xxxx) as typed.
const Code = T.String({ minLength: 1, maxLength: 64 });
export const TwoFactorBody = T.Object({ password: T.String(), code: Code });
export const SecondFactorBody = T.Object({ token: T.String({ minLength: 1, maxLength: 200 }), code: Code });

const conflict = (message: string) => new GatewayError("two_factor_conflict", message);
const expired = () => new GatewayError("second_factor_expired", "This login's step for a code expired or was already used: log in again with your email and password.");

/**
 * Checks a code against the account's second-factor throttle: counted before the check, kept when
 * wrong, cleared when right; 429 once 5 wrong codes in 15 minutes are counted, whatever the password did.
 */
async function codeCheck<T>(c: SessionCall, accountId: number, check: () => Promise<T>): Promise<T> {
  const throttle = c.dash.throttles.secondFactorPerAccount;
  const failure = await throttle.take(String(accountId), "wrong codes for this account");
  return throttledCheck(throttle, failure, check, "invalid_second_factor");
}

/** A recovery code spent: the holder is told by email (under [email]), in case it was not them. */
function told(c: SessionCall, accountId: number, used: FactorUsed): void {
  if (used.kind === "recovery") c.svc.notices.recoveryCodeUsed(accountId, used.left);
}

/** POST /api/login's answer when the password was right and two-factor login is on: no session, a token for the code. */
export async function secondFactorNeeded(c: SessionCall, accountId: number): Promise<Response> {
  const token = newToken();
  const now = Date.now();
  await c.svc.twoFactor.openChallenge(accountId, hashToken(token), now, now + CHALLENGE_TTL_MS);
  return json<SecondFactorRequired>({ second_factor_required: true, token, expires_at: isoTime(now + CHALLENGE_TTL_MS) });
}

/**
 * POST /api/login/second-factor: the login's token with a TOTP or recovery code opens the session.
 * A wrong code leaves the token usable until it expires (the throttle bounds the guesses); a right
 * one uses it, so it opens one session at most.
 */
export async function loginSecondFactor(c: SessionCall): Promise<Response> {
  const { token, code } = c.json as { token: string; code: string };
  const store = c.svc.twoFactor;
  await c.dash.throttles.loginPerIp.take(throttleAddress(c.clientIp() ?? "unknown"), "login attempts from this address");
  const tokenHash = hashToken(token);
  const accountId = await store.challengeOf(tokenHash, Date.now());
  const state = accountId === null ? null : await store.stateOf(accountId);
  if (accountId === null || state?.enabledAt == null) throw expired();
  const used = await codeCheck(c, accountId, () => spendFactor(store, accountId, state, code));
  if (!(await store.useChallenge(tokenHash, Date.now()))) throw expired();
  // Disabled by the operator while the code was being typed: no session, as at the password.
  if ((await c.svc.accounts.loginOf(accountId))?.disabledAt !== null) throw new GatewayError("inactive", "This account is disabled by the operator.");
  told(c, accountId, used);
  return loggedIn(c, accountId, 200);
}

/** POST /api/me/2fa/setup: a new secret for the app; nothing changes at login until it is enabled with a code. */
export async function setupTwoFactor(c: SessionCall): Promise<Response> {
  const accountId = c.session!.accountId;
  const secret = newSecret();
  if (!(await c.svc.twoFactor.begin(accountId, secret, Date.now()))) throw conflict("Two-factor login is already on for this account: disable it first to set up a new app.");
  const email = (await c.svc.accounts.profileOf(accountId))!.email;
  const uri = otpauthUri(issuerOf(c.svc.config.publicUrl), email, secret);
  return json<TwoFactorSetup>({ secret, otpauth_uri: uri, qr_code: await qrCodeOf(uri), enabled: false });
}

/**
 * POST /api/me/2fa/enable: the password and a code of the pending secret turn it on. The recovery
 * codes are answered this once (only their hashes are kept), and every other session of the account
 * ends: one opened with the password alone does not outlive the password alone being enough.
 */
export async function enableTwoFactor(c: SessionCall): Promise<Response> {
  const { password, code } = c.json as { password: string; code: string };
  const { id: sessionId, accountId } = c.session!;
  const store = c.svc.twoFactor;
  const state = await store.stateOf(accountId);
  if (state === null || state.enabledAt !== null) throw conflict(state ? "Two-factor login is already on for this account." : "Set up two-factor login first (POST /api/me/2fa/setup).");
  await currentPasswordCheck(c, () => checkCurrentPassword(c.svc.accounts, accountId, password));
  const step = await codeCheck(c, accountId, async () => (await totpStep(state.secret, code.replace(/\s/g, ""), null)) ?? Promise.reject(wrongCode()));
  const { codes, hashes } = newRecoveryCodes();
  if (!(await store.enable(accountId, state.secret, step, hashes, Date.now()))) throw conflict("The setup changed meanwhile (another setup, or already enabled): start again.");
  const ended = await c.dash.sessions.revokeAll(accountId, sessionId);
  await c.svc.audit.record({ actorAccountId: accountId, action: "two_factor_enabled", targetAccountId: accountId });
  c.svc.notices.twoFactorChanged(accountId, "enabled");
  return json<TwoFactorEnabled>({ enabled: true, recovery_codes: codes, sessions_ended: ended });
}

/** POST /api/me/2fa/disable: the password and a current code (or a recovery code) turn two-factor login off. */
export async function disableTwoFactor(c: SessionCall): Promise<Response> {
  const { password, code } = c.json as { password: string; code: string };
  const accountId = c.session!.accountId;
  const store = c.svc.twoFactor;
  const state: TwoFactorState | null = await store.stateOf(accountId);
  if (state?.enabledAt == null) throw conflict("Two-factor login is not on for this account.");
  await currentPasswordCheck(c, () => checkCurrentPassword(c.svc.accounts, accountId, password));
  const used = await codeCheck(c, accountId, () => spendFactor(store, accountId, state, code));
  await store.remove(accountId);
  told(c, accountId, used);
  await c.svc.audit.record({ actorAccountId: accountId, action: "two_factor_disabled", targetAccountId: accountId });
  c.svc.notices.twoFactorChanged(accountId, "disabled");
  return json<TwoFactorDisabled>({ enabled: false });
}
