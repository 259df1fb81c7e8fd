import { Keys } from "./auth/keys.ts";
import { buildCatalog, type Catalog } from "./catalog/catalog.ts";
import type { Config } from "./config/load.ts";
import { migrate, openDatabase, SERVER_BUSY_TIMEOUT_MS, type Db } from "./db/client.ts";
import { GroupCommit } from "./db/group-commit.ts";
import { Ledger } from "./ledger/ledger.ts";
import { RateLimiter } from "./limits/rate-limit.ts";
import { RequestLog } from "./logs/request-log.ts";
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
  /**
   * Aborted when a stop's deadline passes (server.ts drain): upstream calls still running end, so
   * that every request in flight answers, resolves its hold and writes its log row before the exit.
   */
  cutoff: AbortController;
}

export const VERSION = "0.1.0";

export function buildServices(config: Config, db: Db = openDatabase(config.database, { busyTimeoutMs: SERVER_BUSY_TIMEOUT_MS })): Services {
  migrate(db);
  const commits = new GroupCommit(db.$client);
  return {
    config,
    catalog: buildCatalog(config),
    db,
    commits,
    ledger: new Ledger(db, commits),
    keys: new Keys(db),
    limiter: new RateLimiter(),
    logs: new RequestLog(db, { retentionDays: config.logRetentionDays }),
    settings: new Settings(db),
    health: new Health(),
    providers: buildProviders(config.providers),
    idempotency: new Idempotency(db),
    version: VERSION,
    cutoff: new AbortController(),
  };
}
