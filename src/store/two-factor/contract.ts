// Two-factor login's rows (docs/dashboard.md#two-factor-login): the TOTP secret of each account that
// set one up, its single-use recovery codes (hashed), and the logins waiting for their second
// factor. Cold: async on both engines, one set of statements (queries.ts). The codes' arithmetic is
// src/auth/two-factor.ts's; every "at most once" here is one conditional write, so two instances
// (or two requests at once) never both get the same yes.

/** An account's two-factor row: enabledAt null while the secret awaits its first code. */
export interface TwoFactorState {
  secret: string;
  enabledAt: number | null;
  /** The TOTP time step of the newest code accepted; null before the first. */
  lastStep: number | null;
}

export interface TwoFactorStore {
  stateOf(accountId: number): Promise<TwoFactorState | null>;
  /** The accounts among `accountIds` with two-factor login on. */
  enabledAmong(accountIds: number[]): Promise<Set<number>>;
  /** A new secret awaiting its first code, replacing a pending one; false (nothing changes) while two-factor login is on. */
  begin(accountId: number, secret: string, now: number): Promise<boolean>;
  /**
   * Turns on the pending `secret` whose code of `step` was checked, then stores `recoveryHashes` in
   * place of any older codes. False when that secret is no longer the pending one (enabled by a
   * request at the same time, or replaced by a new setup): nothing changes.
   */
  enable(accountId: number, secret: string, step: number, recoveryHashes: string[], now: number): Promise<boolean>;
  /** Spends the code of time step `step`: true only when it is after the last one spent (a replay is false). */
  spendStep(accountId: number, step: number): Promise<boolean>;
  /** Spends one unused recovery code of the account: true once per code. */
  spendRecoveryCode(accountId: number, codeHash: string, now: number): Promise<boolean>;
  recoveryCodesLeft(accountId: number): Promise<number>;
  /** Removes the secret and the recovery codes; false when there was nothing to remove. */
  remove(accountId: number): Promise<boolean>;
  /** Ends the account's logins waiting for their second factor: their first step proved a password that changed. */
  endChallenges(accountId: number): Promise<void>;
  /** A login waiting for its second factor until `expiresAt`; expired ones are swept meanwhile. */
  openChallenge(accountId: number, tokenHash: string, now: number, expiresAt: number): Promise<void>;
  /** The account of a challenge neither used nor expired at `now`; null otherwise. */
  challengeOf(tokenHash: string, now: number): Promise<number | null>;
  /** Uses the challenge: true for one caller only, and only while it is live. */
  useChallenge(tokenHash: string, now: number): Promise<boolean>;
}
