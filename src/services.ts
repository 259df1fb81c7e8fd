import { Keys } from "./auth/keys.ts";
import { buildCatalog } from "./catalog/catalog.ts";
import type { Config } from "./config/load.ts";
import { migrate, openDatabase, SERVER_BUSY_TIMEOUT_MS, type Db } from "./db/client.ts";
import { GroupCommit } from "./db/group-commit.ts";
import { Calibration } from "./ledger/calibration.ts";
import { Ledger } from "./ledger/ledger.ts";
import { Accounts, type AccountStore } from "./ledger/accounts.ts";
import { Sessions, type SessionStore } from "./auth/sessions.ts";
import { Audit, type AuditTrail } from "./logs/audit.ts";
import { Reports, type LogReports } from "./logs/queries.ts";
import { RateLimiter, type Limiter } from "./limits/rate-limit.ts";
import { RedisRateLimiter } from "./limits/redis-rate-limit.ts";
import { RequestLog, type LogRow } from "./logs/request-log.ts";
import { AccessLog } from "./observe/access-log.ts";
import { Metrics } from "./observe/metrics.ts";
import { Cutoff } from "./relay/cutoff.ts";
import { Health } from "./relay/health.ts";
import type { RelayServices } from "./relay/context.ts";
import { Settings } from "./settings.ts";
import { buildProviders } from "./upstreams/registry.ts";
import { Idempotency } from "./limits/idempotency.ts";
import { StripeCheckout } from "./payments/stripe-checkout.ts";
import { Payments, SqliteTopUpCredit } from "./payments/topups.ts";
import { Checkouts } from "./payments/checkout-sessions.ts";

/** Everything a request needs, built once per process. */
/** Everything a request needs, built once per process: the relay's parts and those of the routes around it. */
export interface Services extends RelayServices {
  db: Db;
  /** SQLite's ledger (serving from PostgreSQL is refused until every owner has its PostgreSQL side). */
  ledger: Ledger;
  keys: Keys;
  /** The accounts' rows, their history and statement (the dashboard's and the admin page's). */
  accounts: AccountStore;
  /** The dashboard's sessions. */
  sessions: SessionStore;
  /** Who did what from the admin page. */
  audit: AuditTrail;
  /** The reports over the request log. */
  reports: LogReports;
  /** The token buckets: in this process, or in `[limits] store` shared by every instance. */
  limiter: Limiter;
  settings: Settings;
  idempotency: Idempotency;
  /** Top-ups through Stripe Checkout; `enabled` is false without [payments.stripe]. */
  payments: Payments;
  version: string;
  /** One JSON line per request on stdout (`[server] access_log`), or null when off. */
  accessLog: AccessLog | null;
  metrics: Metrics;
  /** Run once when the server stops, after the last request: what is buffered goes out. */
  atStop: (() => void)[];
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
): Services {
  migrate(db);
  const commits = new GroupCommit(db.$client);
  const ledger = new Ledger(db, commits);
  const health = new Health();
  const catalog = buildCatalog(config);
  const settings = new Settings(db);
  // Its rows join the requests' batches while the server runs; the last ones are written at stop.
  const calibration = new Calibration(settings, (save) => commits.now(save));
  const metrics = new Metrics({
    holds: () => ({ count: ledger.holds.count, nano: ledger.holds.total }),
    routes: () => catalog.models.flatMap((m) => m.routes.map((r) => health.view(r.key))),
    endpoint: endpointOf,
    calibration: () => calibration.views(),
  });
  const accessLog = config.accessLog ? new AccessLog() : null;
  commits.onCommit = (writes) => metrics.commitBatch(writes);
  const limiter = config.limitStore ? new RedisRateLimiter(config.limitStore) : new RateLimiter();
  const onRow = (r: LogRow) => {
    metrics.row(r);
    accessLog?.line(r);
  };
  return {
    config,
    catalog,
    db,
    commits,
    ledger,
    calibration,
    keys: new Keys(db),
    accounts: new Accounts(db, ledger),
    sessions: new Sessions(db, config.dashboard.sessionTtlMs),
    audit: new Audit(db),
    reports: new Reports(db),
    limiter,
    logs: new RequestLog(db, { retentionDays: config.logRetentionDays, onRow }),
    settings,
    health,
    providers: buildProviders(config.providers),
    idempotency: new Idempotency(db),
    payments: new Payments(new Checkouts(db), new SqliteTopUpCredit(db, ledger, commits), config.stripe ? new StripeCheckout(config.stripe) : null),
    version: VERSION,
    cutoff: new Cutoff(),
    accessLog,
    metrics,
    atStop: [() => calibration.flush(), () => limiter.close(), ...(accessLog ? [() => accessLog.close()] : [])],
  };
}
