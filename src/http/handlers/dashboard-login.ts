import { GatewayError, type ErrorCode } from "../../core/errors.ts";
import { nanoToUsd } from "../../core/money.ts";
import type { Attempt, Throttle } from "../../limits/throttle.ts";
import type { Services } from "../../services.ts";
import { lowBalanceView } from "./v1-account.ts";
import { sessionCookie, type SessionCall } from "../session-guard.ts";
import { json } from "../exchange.ts";
import type { AccountView, Registered } from "../api-schemas.ts";

// What a login ends with, for the password's step (dashboard-account.ts) and the second factor's
// (dashboard-two-factor.ts): the throttled checks, the session opened and the account it answers.

/** GET /api/me's answer: the account and its money, as the ledger and the running requests' holds have it. */
export async function meView(svc: Services, accountId: number): Promise<AccountView> {
  const [p, b, v, f] = await Promise.all([svc.accounts.profileOf(accountId), svc.ledger.balance(accountId), svc.accounts.verificationOf(accountId), svc.twoFactor.stateOf(accountId)]);
  if (!p) throw new GatewayError("no-session", "Log in to use the dashboard.");
  const spendable = Math.max(b.spendableNano, 0);
  return {
    object: "account",
    id: p.id,
    email: p.email,
    admin: p.admin,
    balance_usd: nanoToUsd(b.balanceNano),
    held_usd: nanoToUsd(b.reservedNano),
    spendable_usd: nanoToUsd(spendable),
    low_balance: lowBalanceView(p.lowBalanceNano, spendable),
    // False until the emailed link is opened, for a registration under [email]; the starting credit waits for it.
    email_verified: v === null || v.verified,
    two_factor: f?.enabledAt != null,
  };
}

/**
 * Runs a password (or second-factor code) check whose attempt `failure` has already counted against
 * the account's throttle (counted before the Argon2id await, so that parallel requests cannot all
 * pass a check that has not counted them yet). A wrong password (`counts`) keeps it; a right one
 * clears the account's failures; any other refusal (a disabled account, a weak new password) gives it back.
 */
export async function throttledCheck<T>(throttle: Throttle, failure: Attempt, attempt: () => Promise<T>, counts: ErrorCode = "invalid_credentials"): Promise<T> {
  let result: T;
  try {
    result = await attempt();
  } catch (e) {
    if (!(e instanceof GatewayError && e.code === counts)) await throttle.refund(failure);
    throw e;
  }
  await throttle.clear(failure.key);
  return result;
}

/**
 * A new session for the account, answered with the cookie. The request's old session, if any, ends:
 * the id changes at every login, so a token planted before it (fixation) opens nothing after.
 */
export async function loggedIn(c: SessionCall, accountId: number, status: number, extra: Omit<Registered, keyof AccountView> | null = null): Promise<Response> {
  const { sessions } = c.dash;
  if (c.token) await sessions.revoke(c.token);
  const opened = await sessions.open(accountId);
  return json<AccountView | Registered>({ ...(await meView(c.svc, accountId)), ...extra }, status, { "set-cookie": sessionCookie(c.svc, c.request, opened) });
}

/**
 * A check of the logged-in holder's current password (`check` throws invalid_credentials when it is
 * wrong), counted as a failed login of the account: a stolen session cannot guess it faster than a login could.
 */
export async function currentPasswordCheck<T>(c: SessionCall, check: () => Promise<T>): Promise<T> {
  const t = c.dash.throttles;
  const who = (await c.svc.accounts.profileOf(c.session!.accountId))!.email;
  const failure = await t.loginPerAccount.take(who, "failed logins for this account");
  return throttledCheck(t.loginPerAccount, failure, check);
}
