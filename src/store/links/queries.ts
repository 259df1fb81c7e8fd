import { and, eq, gt, isNotNull, isNull, lte, or } from "drizzle-orm";
import type { Either } from "../engine/either.ts";
import type { NewVerification } from "../accounts/contract.ts";
import type { LinkPurpose, LinkStore, LinkUse } from "./contract.ts";

/**
 * The account_links table's one owner, written once for both engines: each check that guards a write
 * is that write's WHERE (the conflict clause's for a new link), so instances racing on one link agree.
 */
export class LinksOn implements LinkStore {
  constructor(private readonly on: Either) {}

  async issue(accountId: number, purpose: LinkPurpose, link: NewVerification & { newEmail?: string | null }, now: number, sentBefore: number): Promise<boolean> {
    const { db, t } = this.on;
    const row = { tokenHash: link.tokenHash, expiresAt: link.expiresAt, newEmail: link.newEmail ?? null, sentAt: now, usedAt: null };
    const written = await db
      .insert(t.accountLinks)
      .values({ accountId, purpose, ...row })
      // A used link never holds back a new one; a pending one does for the resend interval.
      .onConflictDoUpdate({ target: [t.accountLinks.accountId, t.accountLinks.purpose], set: row, setWhere: or(lte(t.accountLinks.sentAt, sentBefore), isNotNull(t.accountLinks.usedAt)) })
      .returning({ id: t.accountLinks.accountId });
    return written.length > 0;
  }

  async peek(tokenHash: string, purpose: LinkPurpose, now: number): Promise<LinkUse | null> {
    const { db, t } = this.on;
    const [row] = await db.select({ accountId: t.accountLinks.accountId, newEmail: t.accountLinks.newEmail }).from(t.accountLinks).where(this.live(tokenHash, purpose, now));
    return row ?? null;
  }

  async consume(tokenHash: string, purpose: LinkPurpose, now: number): Promise<LinkUse | null> {
    const { db, t } = this.on;
    const [row] = await db
      .update(t.accountLinks)
      .set({ usedAt: now })
      .where(this.live(tokenHash, purpose, now))
      .returning({ accountId: t.accountLinks.accountId, newEmail: t.accountLinks.newEmail });
    return row ?? null;
  }

  async cancel(accountId: number, purpose: LinkPurpose, now: number): Promise<void> {
    const { db, t } = this.on;
    await db.update(t.accountLinks).set({ usedAt: now }).where(and(eq(t.accountLinks.accountId, accountId), eq(t.accountLinks.purpose, purpose), isNull(t.accountLinks.usedAt)));
  }

  async cancelAll(accountId: number, now: number): Promise<void> {
    const { db, t } = this.on;
    await db.update(t.accountLinks).set({ usedAt: now }).where(and(eq(t.accountLinks.accountId, accountId), isNull(t.accountLinks.usedAt)));
  }

  async forget(accountId: number): Promise<void> {
    const { db, t } = this.on;
    await db.delete(t.accountLinks).where(eq(t.accountLinks.accountId, accountId));
  }

  private live(tokenHash: string, purpose: LinkPurpose, now: number) {
    const t = this.on.t.accountLinks;
    return and(eq(t.tokenHash, tokenHash), eq(t.purpose, purpose), isNull(t.usedAt), gt(t.expiresAt, now));
  }
}
