import { Keys } from "./auth/keys.ts";
import { buildCatalog, type Catalog } from "./catalog/catalog.ts";
import type { Config } from "./config/load.ts";
import { migrate, openDatabase, SERVER_BUSY_TIMEOUT_MS, type Db } from "./db/client.ts";
import { GroupCommit } from "./db/group-commit.ts";
import { Ledger } from "./ledger/ledger.ts";
import { RateLimiter } from "./limits/rate-limit.ts";
import { RequestLog, type LogRow } from "./logs/request-log.ts";
import { AccessLog } from "./observe/access-log.ts";
import { Metrics } from "./observe/metrics.ts";
import { Cutoff } from "./relay/cutoff.ts";
import { findRoute } from "./http/routing.ts";
import { Health } from "./relay/health.ts";
import { Settings } from "./settings.ts";
import { buildProviders } from "./upstreams/registry.ts";
import type { Provider } from "./upstreams/types.ts";
import { Idempotency } from "./limits/idempotency.ts";

/** Everything a request needs, built once per process. */
export interface Services {
  config: Config;
  catalog: Catalog;
  db: Db;
  /** Per-request ledger and log writes, committed in groups (see db/group-commit.ts). */
  commits: GroupCommit;
  ledger: Ledger;
  keys: Keys;
  limiter: RateLimiter;
  logs: RequestLog;
  settings: Settings;
  health: Health;
  providers: Map<string, Provider>;
  idempotency: Idempotency;
  version: string;
  /** One JSON line per request on stdout (`[server] access_log`), or null when off. */
  accessLog: AccessLog | null;
  metrics: Metrics;
  /** Run once when the server stops, after the last request: what is buffered goes out. */
  atStop: (() => void)[];
  /**
   * Aborted when a stop's deadline passes (server.ts drain): upstream calls still running end, so
   * that every request in flight answers, resolves its hold and writes its log row before the exit.
   */
  cutoff: Cutoff;
}

export const VERSION = "0.1.0";

export function buildServices(config: Config, db: Db = openDatabase(config.database, { busyTimeoutMs: SERVER_BUSY_TIMEOUT_MS })): Services {
  migrate(db);
  const commits = new GroupCommit(db.$client);
  const ledger = new Ledger(db, commits);
  const health = new Health();
  const catalog = buildCatalog(config);
  const metrics = new Metrics({
    holds: () => ({ count: ledger.holds.count, nano: ledger.holds.total }),
    routes: () => catalog.models.flatMap((m) => m.routes.map((r) => health.view(r.key))),
    route: (path) => findRoute(path)?.path ?? null,
  });
  const accessLog = config.accessLog ? new AccessLog() : null;
  commits.onCommit = (writes) => metrics.commitBatch(writes);
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
    keys: new Keys(db),
    limiter: new RateLimiter(),
    logs: new RequestLog(db, { retentionDays: config.logRetentionDays, onRow }),
    settings: new Settings(db),
    health,
    providers: buildProviders(config.providers),
    idempotency: new Idempotency(db),
    version: VERSION,
    cutoff: new Cutoff(),
    accessLog,
    metrics,
    atStop: accessLog ? [() => accessLog.close()] : [],
  };
}
