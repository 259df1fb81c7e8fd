import { Keys } from "./store/keys/sqlite.ts";
import type { KeyStore } from "./store/keys/contract.ts";
import { PgKeys } from "./store/keys/postgres.ts";
import { PgSessions } from "./store/sessions/postgres.ts";
import type { SessionStore } from "./store/sessions/contract.ts";
import { Sessions } from "./store/sessions/sqlite.ts";
import type { AuditTrail } from "./store/audit/contract.ts";
import { Audit } from "./store/audit/sqlite.ts";
import { PgAudit } from "./store/audit/postgres.ts";
import { PgLogReports } from "./store/reports/postgres.ts";
import { Reports } from "./store/reports/sqlite.ts";
import type { LogReports } from "./store/reports/contract.ts";
import { buildCatalog } from "./catalog/catalog.ts";
import type { Config } from "./config/load.ts";
import { migrate, openDatabase, SERVER_BUSY_TIMEOUT_MS, type Db } from "./store/engine/sqlite/client.ts";
import type { Commits } from "./store/commits/contract.ts";
import { GroupCommit } from "./store/commits/sqlite.ts";
import { listenForChanges } from "./store/engine/postgres/changes.ts";
import { migratePostgres, openPostgres } from "./store/engine/postgres/client.ts";
import { PgCommits } from "./store/commits/postgres.ts";
import { Calibration, type CalibrationStore } from "./ledger/calibration.ts";
import { Accounts } from "./store/accounts/sqlite.ts";
import type { AccountStore } from "./store/accounts/contract.ts";
import { Ledger } from "./store/ledger/sqlite.ts";
import { PgAccounts } from "./store/accounts/postgres.ts";
import type { MoneyLedger } from "./store/ledger/contract.ts";
import { PgLedger } from "./store/ledger/postgres.ts";
import { RateLimiter, type Limiter } from "./limits/rate-limit.ts";
import { RedisRateLimiter } from "./limits/redis-rate-limit.ts";
import { RedisStore } from "./limits/redis-store.ts";
import { accountThrottles, type AccountThrottles } from "./limits/throttle.ts";
import { events } from "./core/events.ts";
import { RequestLog } from "./store/request-log/sqlite.ts";
import type { LogRow } from "./store/request-log/contract.ts";
import { PgRequestLog } from "./store/request-log/postgres.ts";
import { AccessLog } from "./observe/access-log.ts";
import { Metrics } from "./observe/metrics.ts";
import { Cutoff } from "./relay/cutoff.ts";
import { Health } from "./relay/health.ts";
import type { RelayServices } from "./relay/context.ts";
import type { SettingsStore } from "./store/settings/contract.ts";
import { Settings } from "./store/settings/sqlite.ts";
import { PgSettings } from "./store/settings/postgres.ts";
import { buildProviders } from "./upstreams/registry.ts";
import { Idempotency } from "./store/idempotency/sqlite.ts";
import type { IdempotencyStore } from "./store/idempotency/contract.ts";
import { PgIdempotency } from "./store/idempotency/postgres.ts";
import { StripeCheckout } from "./payments/stripe-checkout.ts";
import { Payments } from "./payments/topups.ts";
import { Checkouts, SqliteTopUpCredit } from "./store/checkouts/sqlite.ts";
import { PgCheckouts, PgTopUpCredit } from "./store/checkouts/postgres.ts";

/** Everything a request needs, built once per process: the relay's parts and those of the routes around it. */
export interface Services extends RelayServices {
  /** The SQLite database, or null when the instance serves from PostgreSQL (`[database] url`). */
  db: Db | null;
  keys: KeyStore;
  accounts: AccountStore;
  /** The dashboard's sessions (`[dashboard] session_ttl`). */
  sessions: SessionStore;
  audit: AuditTrail;
  /** The request log's reports: the CLI's and the dashboard's. */
  reports: LogReports;
  /** The token buckets: in this process, or in `[limits] store` shared by every instance. */
  limiter: Limiter;
  /** The dashboard's login and registration throttles: in this process, or in `[limits] store` with the buckets. */
  throttles: AccountThrottles;
  settings: SettingsStore;
  idempotency: IdempotencyStore;
  /** Top-ups through Stripe Checkout; `enabled` is false without [payments.stripe]. */
  payments: Payments;
  version: string;
  /** One JSON line per request on stdout (`[server] access_log`), or null when off. */
  accessLog: AccessLog | null;
  metrics: Metrics;
  /** Run in order once the server stops, after the last request: what is buffered goes out, then the databases close. */
  atStop: (() => unknown)[];
}

/** The parts as SQLite builds them: every answer synchronous (the embedded default, and what most tests drive). */
export interface SqliteServices extends Services {
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

export const VERSION = "0.1.0";

/**
 * Builds the parts once. `endpointOf` names the published endpoint of a path for the metrics' labels:
 * the endpoint table is http/'s, above this module.
 */
export function buildServices(
  config: Config,
  db: Db = openDatabase(config.database, { busyTimeoutMs: SERVER_BUSY_TIMEOUT_MS }),
  endpointOf: (path: string) => string | null = () => null,
): SqliteServices {
  migrate(db);
  const commits = new GroupCommit(db.$client);
  const ledger = new Ledger(db, commits);
  const settings = new Settings(db);
  const parts = sharedParts(config, { ledger, settings, commits, endpointOf });
  commits.onCommit = (writes) => parts.metrics.commitBatch(writes);
  return {
    ...parts,
    db,
    commits,
    ledger,
    keys: new Keys(db),
    accounts: new Accounts(db, ledger),
    sessions: new Sessions(db, config.dashboard.sessionTtlMs),
    audit: new Audit(db),
    reports: new Reports(db),
    logs: new RequestLog(db, { retentionDays: config.logRetentionDays, onRow: parts.onRow }),
    settings,
    idempotency: new Idempotency(db),
    payments: new Payments(new Checkouts(db), new SqliteTopUpCredit(db, ledger, commits), config.stripe ? new StripeCheckout(config.stripe) : null),
  };
}

/**
 * One instance of a cluster on PostgreSQL (`[database] url`, issue 18): the same parts on the
 * PostgreSQL side of each owner. The database must be migrated (`gateway migrate`, or this instance
 * applies what is pending under an advisory lock). Copies of keys and of the pause switch are
 * dropped on the change notices of other writers (db/pg-changes.ts).
 */
export async function buildPostgresServices(config: Config, endpointOf: (path: string) => string | null = () => null): Promise<Services> {
  const url = config.databaseUrl!;
  await migratePostgres(url);
  const pg = openPostgres(url, { max: POOL_SIZE });
  const commits = new PgCommits(pg.$client);
  const [ledger, settings] = await Promise.all([
    PgLedger.start(pg.$client, { instanceId: config.cluster.instanceId, holdTimeoutMs: config.cluster.holdTimeoutMs }),
    PgSettings.load(pg),
  ]);
  const keys = new PgKeys(pg);
  const feed = await listenForChanges(pg.$client, (table) => {
    if (table !== "settings") keys.forget();
    if (table !== "api_keys" && table !== "accounts") void settings.refresh().catch((e: unknown) => events.writeFailed("settings", "refresh", e));
  });
  const parts = sharedParts(config, { ledger, settings, commits, endpointOf });
  ledger.onFence((why) => parts.cutoff.cut(why));
  const logs = new PgRequestLog(pg, { retentionDays: config.logRetentionDays, onRow: parts.onRow });
  const checkouts = new PgCheckouts(pg);
  parts.atStop.push(
    () => feed.stop(),
    () => logs.flush(),
    () => ledger.stop(),
    () => pg.$client.close(),
  );
  return {
    ...parts,
    db: null,
    commits,
    ledger,
    keys,
    accounts: new PgAccounts(pg, ledger),
    sessions: new PgSessions(pg, config.dashboard.sessionTtlMs),
    audit: new PgAudit(pg),
    reports: new PgLogReports(pg),
    logs,
    settings,
    idempotency: new PgIdempotency(pg, config.cluster.instanceId),
    payments: new Payments(checkouts, new PgTopUpCredit(ledger, checkouts), config.stripe ? new StripeCheckout(config.stripe) : null),
  };
}

/** Connections per instance: a request holds one only for its statement, never across an upstream call. */
const POOL_SIZE = 16;

/** What both engines build alike: catalog, health, calibration, metrics, limiter, logs' listeners. */
function sharedParts(
  config: Config,
  { ledger, settings, commits, endpointOf }: { ledger: MoneyLedger; settings: CalibrationStore; commits: Commits; endpointOf: (path: string) => string | null },
) {
  const health = new Health();
  const catalog = buildCatalog(config);
  // Its rows join the requests' writes while the server runs; the last ones are written at stop.
  const calibration = new Calibration(settings, (save) => commits.now(save));
  const metrics = new Metrics({
    holds: () => ({ count: ledger.holds.count, nano: ledger.holds.total }),
    routes: () => catalog.models.flatMap((m) => m.routes.map((r) => health.view(r.key))),
    endpoint: endpointOf,
    calibration: () => calibration.views(),
  });
  const accessLog = config.accessLog ? new AccessLog() : null;
  // One connection to the shared store for the token buckets and the dashboard's throttles.
  const store = config.limitStore ? new RedisStore(config.limitStore) : null;
  const limiter = store ? new RedisRateLimiter(store) : new RateLimiter();
  const onRow = (r: LogRow) => {
    metrics.row(r);
    accessLog?.line(r);
  };
  const atStop: (() => unknown)[] = [() => calibration.flush(), () => limiter.close(), () => store?.close(), ...(accessLog ? [() => accessLog.close()] : [])];
  return {
    config,
    catalog,
    calibration,
    limiter,
    throttles: accountThrottles(store),
    health,
    providers: buildProviders(config.providers),
    version: VERSION,
    cutoff: new Cutoff(),
    accessLog,
    metrics,
    onRow,
    atStop,
  };
}
