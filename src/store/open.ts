import type { Config } from "../config/load.ts";
import type { GatewayError } from "../core/errors.ts";
import { events } from "../core/events.ts";
import { Accounts } from "./accounts/sqlite.ts";
import { PgAccounts } from "./accounts/postgres.ts";
import type { AccountStore } from "./accounts/contract.ts";
import { Audit } from "./audit/sqlite.ts";
import { PgAudit } from "./audit/postgres.ts";
import type { AuditTrail } from "./audit/contract.ts";
import { Checkouts, SqliteTopUpCredit } from "./checkouts/sqlite.ts";
import { PgCheckouts, PgTopUpCredit } from "./checkouts/postgres.ts";
import type { CheckoutStore, TopUpCredit } from "./checkouts/contract.ts";
import { Codes } from "./codes/sqlite.ts";
import { PgCodes } from "./codes/postgres.ts";
import type { CodeStore } from "./codes/contract.ts";
import type { Commits } from "./commits/contract.ts";
import { GroupCommit } from "./commits/sqlite.ts";
import { PgCommits } from "./commits/postgres.ts";
import { listenForChanges } from "./engine/postgres/changes.ts";
import { shareRests } from "./engine/postgres/rests.ts";
import { askReload, listenForReloads } from "./engine/postgres/reloads.ts";
import { migratePostgres, openPostgres, type PgDb } from "./engine/postgres/client.ts";
import { migrate, openDatabase, SERVER_BUSY_TIMEOUT_MS, type Db } from "./engine/sqlite/client.ts";
import { Idempotency } from "./idempotency/sqlite.ts";
import { PgIdempotency } from "./idempotency/postgres.ts";
import type { IdempotencyStore } from "./idempotency/contract.ts";
import { Keys } from "./keys/sqlite.ts";
import { PgKeys } from "./keys/postgres.ts";
import type { KeyStore } from "./keys/contract.ts";
import { Ledger } from "./ledger/sqlite.ts";
import { PgLedger } from "./ledger/postgres.ts";
import type { MoneyLedger } from "./ledger/contract.ts";
import { Reports } from "./reports/sqlite.ts";
import { AdminSqlite } from "./admin/sqlite.ts";
import { PgAdmin } from "./admin/postgres.ts";
import type { AdminQueries } from "./admin/contract.ts";
import { PgLogReports } from "./reports/postgres.ts";
import type { LogReports } from "./reports/contract.ts";
import { SqliteSpend } from "./reports/summary-sqlite.ts";
import { PgSpend } from "./reports/summary-postgres.ts";
import type { SpendReports } from "./reports/contract.ts";
import { RequestLog } from "./request-log/sqlite.ts";
import { PgRequestLog } from "./request-log/postgres.ts";
import type { LogRow, RequestLogStore } from "./request-log/contract.ts";
import { Sessions } from "./sessions/sqlite.ts";
import { PgSessions } from "./sessions/postgres.ts";
import type { SessionStore } from "./sessions/contract.ts";
import type { LinkStore } from "./links/contract.ts";
import { LinksOn } from "./links/queries.ts";
import { onPostgres, onSqlite } from "./engine/either.ts";
import { Settings } from "./settings/sqlite.ts";
import { PgSettings } from "./settings/postgres.ts";
import type { SettingsStore } from "./settings/contract.ts";
import { TwoFactor } from "./two-factor/sqlite.ts";
import { PgTwoFactor } from "./two-factor/postgres.ts";
import type { TwoFactorStore } from "./two-factor/contract.ts";

// The one place that names the engines: it builds the SQLite set or the PostgreSQL set of stores
// from the config, so that services.ts and the CLI ask contracts only (tests/architecture/imports.test.ts).

/** What the operator's commands use, on either engine. */
export interface OperatorStores {
  /** The SQLite database, or null on PostgreSQL (`[database] url`). */
  db: Db | null;
  ledger: MoneyLedger;
  keys: KeyStore;
  accounts: AccountStore;
  audit: AuditTrail;
  reports: LogReports;
  requestLog: RequestLogStore;
  idempotency: IdempotencyStore;
  codes: CodeStore;
  /** The dashboard's sessions: a password the operator sets ends them. */
  sessions: SessionStore;
  /** Two-factor login: the operator may remove an account's (`account update --reset-2fa`). */
  twoFactor: TwoFactorStore;
  /** The emailed links: a password the operator sets voids a pending reset link. */
  links: LinkStore;
  /** The operator's notes on accounts, shared with the admin page. */
  adminQueries: AdminQueries;
  /** Asks every instance on the shared database to reload its config, answering the request's id; null on SQLite (one server). */
  askReload: (() => Promise<string>) | null;
  /** The pause switch and the estimator's rows (PostgreSQL's are read when asked). */
  settings(): Promise<SettingsStore>;
}

/** What a serving instance uses, on either engine. */
export interface Stores {
  /** The SQLite database, or null when the instance serves from PostgreSQL (`[database] url`). */
  db: Db | null;
  commits: Commits;
  ledger: MoneyLedger;
  keys: KeyStore;
  accounts: AccountStore;
  /** The dashboard's sessions (`[dashboard] session_days`). */
  sessions: SessionStore;
  /** Two-factor login's secrets, recovery codes and logins waiting for a code (docs/dashboard.md#two-factor-login). */
  twoFactor: TwoFactorStore;
  /** The emailed password-reset and change-of-email links (docs/dashboard.md#password-reset). */
  links: LinkStore;
  audit: AuditTrail;
  /** The request log's reports: the CLI's and the dashboard's. */
  reports: LogReports;
  /** Spend per day, key and model with its cache tokens: the dashboard overview's (docs/dashboard.md#overview). */
  spend: SpendReports;
  /** The admin page's totals, account search and operator notes. */
  adminQueries: AdminQueries;
  logs: RequestLogStore;
  settings: SettingsStore;
  idempotency: IdempotencyStore;
  checkouts: CheckoutStore;
  topUps: TopUpCredit;
  /** Redemption codes (docs/dashboard.md#redemption-codes). */
  codes: CodeStore;
  /**
   * Tells the other instances that a provider key rests for `ms` more (docs/scaling.md#provider-keys-rests);
   * null with one instance (SQLite). Never throws, never waits.
   */
  announceRest: ((provider: string, keyHash: string, ms: number) => void) | null;
  /** Run in order at stop, after the last request: what is buffered goes out, then the database closes. */
  atStop: (() => unknown)[];
}

/** The SQLite set: every hot-path answer synchronous (the embedded default, and what most tests drive). */
export interface SqliteStores extends Stores {
  db: Db;
  commits: GroupCommit;
  ledger: Ledger;
  keys: Keys;
  accounts: Accounts;
  sessions: Sessions;
  logs: RequestLog;
  settings: Settings;
  idempotency: Idempotency;
}

/** What a serving instance's stores tell the parts above them. */
export interface StoreHooks {
  /** Every request log row written (the access log and the metrics). */
  onRow(r: LogRow): void;
  /** PostgreSQL: this instance lost its lease on the holds and must stop taking money. */
  onFence(why: GatewayError): void;
  /** PostgreSQL: another instance put a provider key (by its SHA-256) to rest for `ms` more. */
  onRest(provider: string, keyHash: string, ms: number): void;
  /** PostgreSQL: a `gateway reload` of the fleet asks this instance to read its config again. */
  onReloadAsked(request: string): void;
}

/** The server's database file, opened as `gateway serve` opens it. */
export const openServerDatabase = (config: Config): Db => openDatabase(config.database, { busyTimeoutMs: SERVER_BUSY_TIMEOUT_MS });

/** The SQLite set of a serving instance, on `db` (brought up to date first). */
export function openSqliteStores(config: Config, db: Db, hooks: Pick<StoreHooks, "onRow">): SqliteStores {
  migrate(db);
  const commits = new GroupCommit(db.$client);
  const ledger = new Ledger(db, commits);
  return {
    db,
    commits,
    ledger,
    keys: new Keys(db),
    accounts: new Accounts(db, ledger),
    sessions: new Sessions(db, config.dashboard.sessionTtlMs),
    twoFactor: new TwoFactor(db),
    links: new LinksOn(onSqlite(db)),
    audit: new Audit(db),
    reports: new Reports(db),
    spend: new SqliteSpend(db),

    adminQueries: new AdminSqlite(db),
    logs: new RequestLog(db, { retentionDays: config.logRetentionDays, onRow: (r) => hooks.onRow(r), commits }),
    settings: new Settings(db),
    idempotency: new Idempotency(db),
    checkouts: new Checkouts(db),
    topUps: new SqliteTopUpCredit(db, ledger, commits),
    codes: new Codes(db, ledger, commits),
    announceRest: null,
    atStop: [],
  };
}

/** Connections per instance: a request holds one only for its statement, never across an upstream call. */
const POOL_SIZE = 16;

/**
 * The PostgreSQL set of one instance of a cluster (`[database] url`). The database must be migrated
 * (`gateway migrate`, or this instance applies what is pending under an advisory lock). Copies of
 * keys and of the pause switch are dropped on the change notices of other writers.
 */
export async function openPostgresStores(config: Config, hooks: StoreHooks): Promise<Stores> {
  const url = config.databaseUrl!;
  await migratePostgres(url);
  const pg = openPostgres(url, { max: POOL_SIZE });
  const [ledger, settings] = await Promise.all([
    PgLedger.start(pg.$client, { instanceId: config.cluster.instanceId, holdTimeoutMs: config.cluster.holdTimeoutMs }),
    PgSettings.load(pg),
  ]);
  ledger.onFence((why) => hooks.onFence(why));
  const keys = new PgKeys(pg);
  const feed = await listenForChanges(pg.$client, (table) => {
    if (table !== "settings") keys.forget();
    if (table !== "api_keys" && table !== "accounts") void settings.refresh().catch((e: unknown) => events.writeFailed("settings", "refresh", e));
  });
  const rests = await shareRests(pg.$client, config.cluster.instanceId, (n) => hooks.onRest(n.provider, n.keyHash, n.ms), (n, cause) => events.restNotShared({ provider: n.provider, cause }));
  const reloads = await listenForReloads(pg.$client, (request) => hooks.onReloadAsked(request));
  const logs = new PgRequestLog(pg, { retentionDays: config.logRetentionDays, onRow: (r) => hooks.onRow(r) });
  const checkouts = new PgCheckouts(pg);
  return {
    db: null,
    commits: new PgCommits(pg.$client),
    ledger,
    keys,
    accounts: new PgAccounts(pg, ledger),
    sessions: new PgSessions(pg, config.dashboard.sessionTtlMs),
    twoFactor: new PgTwoFactor(pg),
    links: new LinksOn(onPostgres(pg)),
    audit: new PgAudit(pg),
    reports: new PgLogReports(pg),
    spend: new PgSpend(pg),

    adminQueries: new PgAdmin(pg),
    logs,
    settings,
    idempotency: new PgIdempotency(pg, config.cluster.instanceId),
    checkouts,
    topUps: new PgTopUpCredit(ledger, checkouts),
    codes: new PgCodes(pg, ledger),
    announceRest: (provider, keyHash, ms) => rests.announce({ provider, keyHash, ms }),
    atStop: [() => feed.stop(), () => rests.stop(), () => reloads.stop(), () => logs.flush(), () => ledger.stop(), () => ledger.retire(), () => pg.$client.close()],
  };
}

/** The operator's stores on a SQLite file the CLI opened. Its ledger takes no group commit: the CLI credits, never reserves. */
export function sqliteOperatorStores(config: Config, db: Db): OperatorStores {
  const ledger = new Ledger(db);
  return {
    db,
    ledger,
    keys: new Keys(db),
    accounts: new Accounts(db, ledger),
    audit: new Audit(db),
    reports: new Reports(db),
    requestLog: new RequestLog(db, { retentionDays: config.logRetentionDays }),
    idempotency: new Idempotency(db),
    codes: new Codes(db, ledger),
    sessions: new Sessions(db, config.dashboard.sessionTtlMs),
    twoFactor: new TwoFactor(db),
    links: new LinksOn(onSqlite(db)),
    adminQueries: new AdminSqlite(db),
    askReload: null,
    settings: async () => new Settings(db),
  };
}

/** The operator's stores on PostgreSQL. The ledger takes no holds: the CLI credits, never reserves. */
export function postgresOperatorStores(config: Config, pg: PgDb): OperatorStores {
  const ledger = PgLedger.forOperator(pg.$client);
  return {
    db: null,
    ledger,
    keys: new PgKeys(pg),
    accounts: new PgAccounts(pg, ledger),
    audit: new PgAudit(pg),
    reports: new PgLogReports(pg),
    requestLog: new PgRequestLog(pg, { retentionDays: config.logRetentionDays }),
    idempotency: new PgIdempotency(pg, config.cluster.instanceId),
    codes: new PgCodes(pg, ledger),
    sessions: new PgSessions(pg, config.dashboard.sessionTtlMs),
    twoFactor: new PgTwoFactor(pg),
    links: new LinksOn(onPostgres(pg)),
    adminQueries: new PgAdmin(pg),
    askReload: () => askReload(pg.$client),
    settings: () => PgSettings.load(pg),
  };
}
