import { and, asc, count, desc, eq, getTableColumns, isNotNull, isNull, lte, max, sql } from "drizzle-orm";
import type { PgDb } from "../engine/postgres/client.ts";
import { accounts, emailVerifications, ledgerEntries } from "../schema/postgres.ts";
import { accountExists, checkDebitAmount, closureRefused, checkThreshold, DAY_MS, dayOf, debitRefused, newestFirst, noAccount, normalizedEmail } from "./rules.ts";
import { alreadyClosed, closedAddress, FORFEIT_NOTE, STARTING_BALANCE_NANO, type Account, type ClosedAccount, type AccountLogin, type AccountProfile, type AccountStore, type LedgerEntry, type NewAccount, type NewVerification, type StatementItem, type StatementPosition, type VerificationState, type Verified } from "./contract.ts";
import type { PgLedger } from "../ledger/postgres.ts";
import { countRegistrationCredit } from "../settings/postgres.ts";

// The accounts on PostgreSQL (`[database] url`): the same answers as accounts.ts gives on SQLite.
// Several instances write these rows at once, so every check that guards a write is the WHERE (or
// the conflict clause) of that write, never a read before it.

const { passwordHash: _hash, heldNano: _held, lowBalanceNotifiedAt: _notified, ...ACCOUNT } = getTableColumns(accounts);
const LOGIN = { id: accounts.id, passwordHash: accounts.passwordHash, disabledAt: accounts.disabledAt };

type Row = Record<string, string | number | null>;

export class PgAccounts implements AccountStore {
  constructor(
    private readonly db: PgDb,
    /** Credits the opening balance: the ledger's credit, joining the account's transaction. */
    private readonly ledger: PgLedger,
  ) {}

  async find(email: string): Promise<Account | null> {
    const [row] = await this.db.select(ACCOUNT).from(accounts).where(eq(accounts.email, email.trim().toLowerCase())).limit(1);
    return row ?? null;
  }

  async findById(id: number): Promise<Account | null> {
    const [row] = await this.db.select(ACCOUNT).from(accounts).where(eq(accounts.id, id)).limit(1);
    return row ?? null;
  }

  /** The unique email decides a race between two instances: the second insert adds nothing and is refused. */
  /** The row and its opening credit in one transaction: a crash between them leaves neither. */
  async create(email: string, opts: NewAccount = {}): Promise<Account> {
    const normalized = normalizedEmail(email);
    const opening = opts.verification ? 0 : (opts.balanceNano ?? STARTING_BALANCE_NANO);
    const id = await this.db.$client.begin(async (tx) => {
      const now = Date.now();
      const [row] = await tx`INSERT INTO accounts (email, password_hash, admin, created_at)
        VALUES (${normalized}, ${opts.passwordHash ?? null}, ${opts.admin ?? false}, ${now}::bigint)
        ON CONFLICT (email) DO NOTHING RETURNING id`;
      if (!row) throw accountExists(normalized);
      if (opts.invite) {
        const claim = await opts.invite(Number(row.id), tx);
        await this.ledger.credit(Number(row.id), claim.amountNano, "redemption", claim.note, claim.externalRef, tx);
        return Number(row.id);
      }
      const v = opts.verification;
      if (v) await tx`INSERT INTO email_verifications (account_id, token_hash, expires_at, sent_at) VALUES (${row.id}, ${v.tokenHash}, ${v.expiresAt}::bigint, ${now}::bigint)`;
      const granted = opening > 0 && (opts.dailyLimitNano === undefined || (await countRegistrationCredit(tx, opening, opts.dailyLimitNano, Date.now())));
      if (granted) await this.ledger.credit(Number(row.id), opening, opts.kind ?? "registration_credit", "starting balance", null, tx);
      return Number(row.id);
    });
    return (await this.findById(id))!;
  }

  async count(): Promise<number> {
    const [row] = await this.db.select({ n: count() }).from(accounts);
    return row!.n;
  }

  list(): Promise<Account[]> {
    return this.db.select(ACCOUNT).from(accounts).orderBy(asc(accounts.id));
  }

  recentEntries(accountId: number, limit: number): Promise<LedgerEntry[]> {
    return this.db.select().from(ledgerEntries).where(eq(ledgerEntries.accountId, accountId)).orderBy(desc(ledgerEntries.id)).limit(limit);
  }

  /**
   * One statement: the balance lowered only if what stays covers every instance's holds on it
   * (accounts.held_nano), and the operator_debit entry written only if it was. Refused, the row is
   * read again to word why.
   */
  async debit(accountId: number, amountNano: number, note: string): Promise<number> {
    checkDebitAmount(amountNano);
    const [r] = (await this.db.$client.unsafe(
      `WITH a AS (UPDATE accounts SET balance_nano = balance_nano - $2::bigint WHERE id = $1 AND balance_nano - held_nano >= $2::bigint RETURNING balance_nano),
        e AS (INSERT INTO ledger_entries (account_id, kind, amount_nano, note, created_at) SELECT $1, 'operator_debit', -$2::bigint, $3, $4::bigint FROM a)
      SELECT (SELECT balance_nano FROM a)::text AS balance`,
      [accountId, amountNano, note, Date.now()],
    )) as Row[];
    if (r!.balance !== null) return Number(r!.balance);
    const [acc] = await this.db.select({ balanceNano: accounts.balanceNano, heldNano: accounts.heldNano }).from(accounts).where(eq(accounts.id, accountId));
    if (!acc) throw noAccount(accountId);
    throw debitRefused(amountNano, acc.balanceNano, acc.heldNano);
  }

  async setDisabled(accountId: number, disabled: boolean, now = Date.now()): Promise<boolean> {
    const changed = await this.db
      .update(accounts)
      .set({ disabledAt: disabled ? now : null })
      .where(and(eq(accounts.id, accountId), disabled ? isNull(accounts.disabledAt) : isNotNull(accounts.disabledAt)))
      .returning({ id: accounts.id });
    return changed.length > 0;
  }

  async setAdmin(accountId: number, admin: boolean): Promise<boolean> {
    const changed = await this.db.update(accounts).set({ admin }).where(and(eq(accounts.id, accountId), eq(accounts.admin, !admin))).returning({ id: accounts.id });
    return changed.length > 0;
  }

  /** One grouped read over ledger_account_time for all the accounts; an account without charges is 0. */
  async chargedSince(accountIds: number[], since: number): Promise<Map<number, number>> {
    const charged = new Map<number, number>(accountIds.map((id) => [id, 0]));
    if (accountIds.length === 0) return charged;
    const rows = (await this.db.$client.unsafe(
      `SELECT account_id::text, (-sum(amount_nano))::text AS nano FROM ledger_entries
      WHERE account_id = ANY($1::bigint[]) AND created_at >= $2::bigint AND kind = 'charge' GROUP BY account_id`,
      [accountIds, since],
    )) as Row[];
    for (const r of rows) charged.set(Number(r.account_id), Number(r.nano));
    return charged;
  }

  async findLogin(email: string): Promise<AccountLogin | null> {
    const [row] = await this.db.select(LOGIN).from(accounts).where(eq(accounts.email, email.trim().toLowerCase())).limit(1);
    return row ?? null;
  }

  async loginOf(accountId: number): Promise<AccountLogin | null> {
    const [row] = await this.db.select(LOGIN).from(accounts).where(eq(accounts.id, accountId)).limit(1);
    return row ?? null;
  }

  async profileOf(accountId: number): Promise<AccountProfile | null> {
    const [row] = await this.db.select({ ...ACCOUNT, lowBalanceNotifiedAt: accounts.lowBalanceNotifiedAt }).from(accounts).where(eq(accounts.id, accountId)).limit(1);
    return row ?? null;
  }

  async setPasswordHash(accountId: number, hash: string): Promise<void> {
    await this.db.update(accounts).set({ passwordHash: hash }).where(eq(accounts.id, accountId));
  }
  /** The unique email decides a race with a registration: the loser's write is refused (23505). */
  async setEmail(accountId: number, email: string): Promise<void> {
    const normalized = normalizedEmail(email);
    try {
      const set = await this.db.update(accounts).set({ email: normalized }).where(and(eq(accounts.id, accountId), isNull(accounts.closedAt))).returning({ id: accounts.id });
      if (set.length === 0) throw alreadyClosed(accountId);
    } catch (e) {
      // Drizzle wraps the driver's error; Bun's carries the SQLSTATE as errno.
      if ((e as { cause?: { errno?: string } }).cause?.errno === "23505") throw accountExists(normalized);
      throw e;
    }
  }


  async setLowBalanceThreshold(accountId: number, nano: number | null): Promise<void> {
    checkThreshold(nano);
    await this.db.update(accounts).set({ lowBalanceNano: nano }).where(eq(accounts.id, accountId));
  }

  /**
   * The statement's page as on SQLite (accounts.ts, statementPage): credits one by one, charges
   * summed per UTC day, a day shown on the page where its latest charge falls. Two statements: the
   * credits after the cursor, and the charges grouped by day, where a day is left out whole when its
   * latest charge is not before the cursor (the page before showed it).
   */
  async statementPage(accountId: number, upTo: number, before: StatementPosition | null, limit: number): Promise<StatementItem[]> {
    const cursor = before ? [before.createdAt, before.id] : [null, null];
    const credits = (await this.db.$client.unsafe(
      `SELECT id::text, kind::text, amount_nano::text, note, external_ref, created_at::text FROM ledger_entries
      WHERE account_id = $1 AND id <= $2::bigint AND kind <> 'charge' AND ($3::bigint IS NULL OR (created_at, id) < ($3::bigint, $4::bigint))
      ORDER BY created_at DESC, id DESC LIMIT $5`,
      [accountId, upTo, ...cursor, limit],
    )) as Row[];
    const items: StatementItem[] = credits.map((e) => {
      const at = { createdAt: Number(e.created_at), id: Number(e.id) };
      return { kind: e.kind as never, amountNano: Number(e.amount_nano), note: e.note as string | null, externalRef: e.external_ref as string | null, createdAt: at.createdAt, at };
    });
    return newestFirst(items.concat(await this.chargeDays(accountId, upTo, before, limit)), limit);
  }

  private async chargeDays(accountId: number, upTo: number, before: StatementPosition | null, limit: number): Promise<StatementItem[]> {
    // Whole days only: a day reaching past the cursor must keep its later charges to be left out.
    const dayEnd = before ? before.createdAt - (((before.createdAt % DAY_MS) + DAY_MS) % DAY_MS) + DAY_MS : null;
    const cursor = before ? [before.createdAt, before.id] : [null, null];
    const rows = (await this.db.$client.unsafe(
      `SELECT day::text, amount::text, n, latest_at::text, latest_id::text FROM (
        SELECT created_at - ((created_at % $3::bigint) + $3::bigint) % $3::bigint AS day, sum(amount_nano) AS amount, count(*)::int AS n,
          max(created_at) AS latest_at,
          (array_agg(id ORDER BY created_at DESC, id DESC))[1] AS latest_id
        FROM ledger_entries WHERE account_id = $1 AND id <= $2::bigint AND kind = 'charge' AND ($4::bigint IS NULL OR created_at < $4::bigint)
        GROUP BY 1) g
      WHERE $5::bigint IS NULL OR (latest_at, latest_id) < ($5::bigint, $6::bigint)
      ORDER BY day DESC LIMIT $7`,
      [accountId, upTo, DAY_MS, dayEnd, ...cursor, limit],
    )) as Row[];
    return rows.map((r) => {
      const at = { createdAt: Number(r.latest_at), id: Number(r.latest_id) };
      return { kind: "charges" as const, day: dayOf(Number(r.day)), amountNano: Number(r.amount), count: Number(r.n), createdAt: at.createdAt, at };
    });
  }

  async newestLedgerId(): Promise<number> {
    const [row] = await this.db.select({ id: max(ledgerEntries.id) }).from(ledgerEntries);
    return row?.id ?? 0;
  }

  // A registration's address check (docs/dashboard.md#address-verification), as on SQLite.

  async verificationOf(accountId: number): Promise<VerificationState | null> {
    const [row] = await this.db.select({ verifiedAt: emailVerifications.verifiedAt, sentAt: emailVerifications.sentAt }).from(emailVerifications).where(eq(emailVerifications.accountId, accountId));
    return row ? { verified: row.verifiedAt !== null, sentAt: row.sentAt } : null;
  }

  /** The token's use is the UPDATE's WHERE: of two instances opening one link at once, one gets the row. */
  async verifyEmail(tokenHash: string, now: number, startingNano: number, dailyNano: number): Promise<Verified | null> {
    return this.db.$client.begin(async (tx) => {
      const [used] = await tx`UPDATE email_verifications SET verified_at = ${now}::bigint
        WHERE token_hash = ${tokenHash} AND verified_at IS NULL AND expires_at > ${now}::bigint RETURNING account_id`;
      if (!used) return null;
      const accountId = Number(used.account_id);
      const granted = startingNano > 0 && (await countRegistrationCredit(tx, startingNano, dailyNano, now)) ? startingNano : 0;
      if (granted > 0) await this.ledger.credit(accountId, granted, "registration_credit", "starting balance", null, tx);
      const [acc] = await tx`SELECT email FROM accounts WHERE id = ${accountId}`;
      return { accountId, email: acc!.email as string, creditedNano: granted };
    });
  }

  async renewVerification(accountId: number, next: NewVerification, now: number, sentBefore: number): Promise<boolean> {
    const pending = and(eq(emailVerifications.accountId, accountId), isNull(emailVerifications.verifiedAt), lte(emailVerifications.sentAt, sentBefore));
    return (await this.db.update(emailVerifications).set({ ...next, sentAt: now }).where(pending).returning({ id: emailVerifications.accountId })).length > 0;
  }

  async markLowBalanceNotice(accountId: number, sent: boolean, now: number): Promise<boolean> {
    const from = sent ? isNull(accounts.lowBalanceNotifiedAt) : isNotNull(accounts.lowBalanceNotifiedAt);
    return (await this.db.update(accounts).set({ lowBalanceNotifiedAt: sent ? now : null }).where(and(eq(accounts.id, accountId), from)).returning({ id: accounts.id })).length > 0;
  }

  /**
   * One transaction on the account's row, locked first: a reserve on any instance raises held_nano
   * with an UPDATE of that row, so it waits for the closure (and then finds the account disabled and
   * its balance gone) or came before it (and its hold refuses the closure). Raw SQL, as debit's.
   */
  async close(accountId: number, forfeitNano: number, now = Date.now()): Promise<ClosedAccount> {
    return this.db.$client.begin(async (tx) => {
      const [row] = await tx`SELECT email, balance_nano::text AS balance, held_nano::text AS held, closed_at::text AS closed FROM accounts WHERE id = ${accountId} FOR UPDATE`;
      if (!row) throw noAccount(accountId);
      const state = { closedAt: row.closed === null ? null : Number(row.closed), balanceNano: Number(row.balance) };
      const refused = closureRefused(accountId, state, Number(row.held), forfeitNano);
      if (refused) throw refused;
      if (forfeitNano > 0) {
        await tx`INSERT INTO ledger_entries (account_id, kind, amount_nano, note, created_at) VALUES (${accountId}, 'operator_debit', ${-forfeitNano}::bigint, ${FORFEIT_NOTE}, ${now}::bigint)`;
      }
      await tx`UPDATE accounts SET balance_nano = balance_nano - ${forfeitNano}::bigint, closed_at = ${now}::bigint, disabled_at = COALESCE(disabled_at, ${now}::bigint),
        email = ${closedAddress(accountId)}, password_hash = NULL, low_balance_nano = NULL, low_balance_notified_at = NULL WHERE id = ${accountId}`;
      await tx`DELETE FROM email_verifications WHERE account_id = ${accountId}`;
      return { accountId, email: String(row.email), forfeitedNano: forfeitNano };
    });
  }
}
