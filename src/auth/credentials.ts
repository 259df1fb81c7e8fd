import { GatewayError } from "../core/errors.ts";
import type { Account, AccountStore, NewVerification } from "../store/accounts/contract.ts";
import type { InviteClaim } from "../store/codes/contract.ts";
import { checkNewPassword, hashPassword, verifyPassword } from "./passwords.ts";

// What the dashboard's register, login and password change do to an account, below HTTP: the
// throttles and the session cookie are the http layer's (http/handlers/dashboard-account.ts).

// One text for an unknown email and a wrong password, so that a login tells nobody which emails exist.
export const badCredentials = () => new GatewayError("invalid_credentials", "Incorrect email or password.");

/**
 * A new account with a password, credited `startingNano` as one registration_credit ledger entry
 * while the day's registration credits stay within `dailyNano` (0 past it); or, invited, the value
 * of the invite's code as one redemption entry. The email is checked before the password is hashed,
 * so a taken email costs no Argon2id work. With `verification` (under [email]) the account opens at
 * 0 and the credit waits for the emailed link (AccountStore.verifyEmail).
 */
export async function register(
  accounts: AccountStore,
  email: string,
  password: string,
  startingNano: number,
  dailyNano: number,
  extra: { invite?: InviteClaim; verification?: NewVerification } = {},
): Promise<Account> {
  checkNewPassword(password);
  if (await accounts.find(email)) throw new GatewayError("invalid_request", "An account with this email already exists; log in instead.");
  const hash = await hashPassword(password);
  // Checked again after the await: another request may have registered the email meanwhile.
  // An invite's code is claimed in the account's transaction; its value replaces the starting credit.
  if (extra.invite) return accounts.create(email, { passwordHash: hash, invite: extra.invite });
  return accounts.create(email, { passwordHash: hash, balanceNano: startingNano, kind: "registration_credit", dailyLimitNano: dailyNano, verification: extra.verification });
}

/** The account whose email and password these are; the same refusal whichever of the two is wrong. */
export async function checkLogin(accounts: AccountStore, email: string, password: string): Promise<number> {
  const login = await accounts.findLogin(email);
  // Verified even for an unknown email (against a decoy): the answer takes the same time.
  if (!(await verifyPassword(password, login?.passwordHash ?? null)) || !login) throw badCredentials();
  if (login.disabledAt !== null) throw new GatewayError("inactive", "This account is disabled by the operator.");
  return login.id;
}

/** Refuses (401 invalid_credentials) unless `password` is the logged-in account's current one. */
export async function checkCurrentPassword(accounts: AccountStore, accountId: number, password: string): Promise<void> {
  if (!(await verifyPassword(password, (await accounts.loginOf(accountId))?.passwordHash ?? null))) {
    throw new GatewayError("invalid_credentials", "The current password is incorrect.");
  }
}

/** Replaces the password after checking the current one; the caller ends the other sessions. */
export async function changePassword(accounts: AccountStore, accountId: number, current: string, next: string): Promise<void> {
  checkNewPassword(next, "new_password");
  await checkCurrentPassword(accounts, accountId, current);
  await accounts.setPasswordHash(accountId, await hashPassword(next));
}
