import { and, count, eq, gt, inArray, isNotNull, isNull, lt, or } from "drizzle-orm";
import type { Either } from "../engine/either.ts";
import type { TwoFactorState, TwoFactorStore } from "./contract.ts";

/** The two-factor tables' one owner, written once for both engines (contract.ts). */
export class TwoFactorOn implements TwoFactorStore {
  constructor(private readonly on: Either) {}

  async stateOf(accountId: number): Promise<TwoFactorState | null> {
    const { db, t } = this.on;
    const [row] = await db
      .select({ secret: t.twoFactor.secret, enabledAt: t.twoFactor.enabledAt, lastStep: t.twoFactor.lastStep })
      .from(t.twoFactor)
      .where(eq(t.twoFactor.accountId, accountId));
    return row ?? null;
  }

  async enabledAmong(accountIds: number[]): Promise<Set<number>> {
    if (accountIds.length === 0) return new Set();
    const { db, t } = this.on;
    const rows = await db
      .select({ id: t.twoFactor.accountId })
      .from(t.twoFactor)
      .where(and(inArray(t.twoFactor.accountId, accountIds), isNotNull(t.twoFactor.enabledAt)));
    return new Set(rows.map((r) => r.id));
  }

  async begin(accountId: number, secret: string, now: number): Promise<boolean> {
    const { db, t } = this.on;
    // The conflict's update keeps an enabled row as it is (the WHERE), so a setup never replaces a live secret.
    const rows = await db
      .insert(t.twoFactor)
      .values({ accountId, secret, createdAt: now })
      .onConflictDoUpdate({ target: t.twoFactor.accountId, set: { secret, createdAt: now, lastStep: null }, setWhere: isNull(t.twoFactor.enabledAt) })
      .returning({ id: t.twoFactor.accountId });
    return rows.length === 1;
  }

  async enable(accountId: number, secret: string, step: number, recoveryHashes: string[], now: number): Promise<boolean> {
    const { db, t } = this.on;
    // Turned on first, then the codes: of two enables at once only the one that turned it on writes
    // codes, so the codes stored are the ones its holder was shown.
    const on = await db
      .update(t.twoFactor)
      .set({ enabledAt: now, lastStep: step })
      .where(and(eq(t.twoFactor.accountId, accountId), eq(t.twoFactor.secret, secret), isNull(t.twoFactor.enabledAt)))
      .returning({ id: t.twoFactor.accountId });
    if (on.length !== 1) return false;
    await db.delete(t.recoveryCodes).where(eq(t.recoveryCodes.accountId, accountId));
    await db.insert(t.recoveryCodes).values(recoveryHashes.map((codeHash) => ({ codeHash, accountId, createdAt: now })));
    return true;
  }

  async spendStep(accountId: number, step: number): Promise<boolean> {
    const { db, t } = this.on;
    const rows = await db
      .update(t.twoFactor)
      .set({ lastStep: step })
      .where(and(eq(t.twoFactor.accountId, accountId), or(isNull(t.twoFactor.lastStep), lt(t.twoFactor.lastStep, step))))
      .returning({ id: t.twoFactor.accountId });
    return rows.length === 1;
  }

  async spendRecoveryCode(accountId: number, codeHash: string, now: number): Promise<boolean> {
    const { db, t } = this.on;
    const rows = await db
      .update(t.recoveryCodes)
      .set({ usedAt: now })
      .where(and(eq(t.recoveryCodes.codeHash, codeHash), eq(t.recoveryCodes.accountId, accountId), isNull(t.recoveryCodes.usedAt)))
      .returning({ h: t.recoveryCodes.codeHash });
    return rows.length === 1;
  }

  async recoveryCodesLeft(accountId: number): Promise<number> {
    const { db, t } = this.on;
    const [row] = await db
      .select({ n: count() })
      .from(t.recoveryCodes)
      .where(and(eq(t.recoveryCodes.accountId, accountId), isNull(t.recoveryCodes.usedAt)));
    return Number(row?.n ?? 0);
  }

  async remove(accountId: number): Promise<boolean> {
    const { db, t } = this.on;
    const gone = await db.delete(t.twoFactor).where(eq(t.twoFactor.accountId, accountId)).returning({ id: t.twoFactor.accountId });
    await db.delete(t.recoveryCodes).where(eq(t.recoveryCodes.accountId, accountId));
    // A login already past its password waits on a factor that is gone: it logs in again.
    await this.endChallenges(accountId);
    return gone.length === 1;
  }

  async endChallenges(accountId: number): Promise<void> {
    const { db, t } = this.on;
    await db.delete(t.loginChallenges).where(eq(t.loginChallenges.accountId, accountId));
  }

  async openChallenge(accountId: number, tokenHash: string, now: number, expiresAt: number): Promise<void> {
    const { db, t } = this.on;
    await db.delete(t.loginChallenges).where(lt(t.loginChallenges.expiresAt, now));
    await db.insert(t.loginChallenges).values({ id: tokenHash, accountId, createdAt: now, expiresAt });
  }

  async challengeOf(tokenHash: string, now: number): Promise<number | null> {
    const { db, t } = this.on;
    const [row] = await db
      .select({ accountId: t.loginChallenges.accountId })
      .from(t.loginChallenges)
      .where(and(eq(t.loginChallenges.id, tokenHash), isNull(t.loginChallenges.usedAt), gt(t.loginChallenges.expiresAt, now)));
    return row?.accountId ?? null;
  }

  async useChallenge(tokenHash: string, now: number): Promise<boolean> {
    const { db, t } = this.on;
    const rows = await db
      .update(t.loginChallenges)
      .set({ usedAt: now })
      .where(and(eq(t.loginChallenges.id, tokenHash), isNull(t.loginChallenges.usedAt), gt(t.loginChallenges.expiresAt, now)))
      .returning({ id: t.loginChallenges.id });
    return rows.length === 1;
  }
}
