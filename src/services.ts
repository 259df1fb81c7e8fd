import { buildCatalog, type Catalog } from "./catalog/catalog.ts";
import { ConfigError, type Config } from "./config/load.ts";
import type { ProviderConfig } from "./config/schema.ts";
import type { Provider } from "./upstreams/types.ts";
import { Calibration, type CalibrationStore } from "./ledger/calibration.ts";
import { RateLimiter, type Limiter } from "./limits/rate-limit.ts";
import { RedisRateLimiter } from "./limits/redis-rate-limit.ts";
import { RedisStore } from "./limits/redis-store.ts";
import { accountThrottles, type AccountThrottles } from "./limits/throttle.ts";
import { AccessLog } from "./observe/access-log.ts";
import { Metrics } from "./observe/metrics.ts";
import { Cutoff } from "./relay/cutoff.ts";
import { Health } from "./relay/health.ts";
import { Capacity } from "./relay/capacity.ts";
import type { RelayServices } from "./relay/context.ts";
import { buildProviders } from "./upstreams/registry.ts";
import { StripeCheckout } from "./payments/stripe-checkout.ts";
import { Payments } from "./payments/topups.ts";
import { issuerOf, receiptNumber, receiptText } from "./payments/receipt.ts";
import { formatUsd } from "./core/money.ts";
import type { CheckoutSession } from "./store/checkouts/contract.ts";
import { Notices } from "./notices/notices.ts";
import { events } from "./core/events.ts";
import type { Commits } from "./store/commits/contract.ts";
import type { MoneyLedger, ReloadRecord } from "./store/ledger/contract.ts";
import type { LogRow } from "./store/request-log/contract.ts";
import type { Db } from "./store/database.ts";
import { openPostgresStores, openServerDatabase, openSqliteStores, type SqliteStores, type Stores } from "./store/open.ts";

/** The stores a request reaches directly: the top-ups' are reached through `payments`, and their stop runs in `atStop`. */
type Reached<S extends Stores> = Omit<S, "checkouts" | "topUps" | "atStop" | "announceRest">;

/** Everything a request needs, built once per process: the relay's parts, the stores and the parts of the routes around them. */
export interface Services extends RelayServices, Reached<Stores> {
  /** The token buckets: in this process, or in `[limits] store` shared by every instance. */
  limiter: Limiter;
  /** The dashboard's login and registration throttles: in this process, or in `[limits] store` with the buckets. */
  throttles: AccountThrottles;
  /** Top-ups through Stripe Checkout; `enabled` is false without [payments.stripe]. */
  payments: Payments;
  /** Emails to holders (`[email]`) and signed events to the operator (`[notifications]`), sent in the background. */
  notices: Notices;
  version: string;
  /** One JSON line per request on stdout (`[server] access_log`), or null when off. */
  accessLog: AccessLog | null;
  metrics: Metrics;
  /** The config generation each request takes at its start; `reload()` swaps in the next one. */
  live: Live;
  /** Run in order once the server stops, after the last request: what is buffered goes out, then the databases close. */
  atStop: (() => unknown)[];
}

/** The parts as SQLite builds them: every hot-path answer synchronous (the embedded default, and what most tests drive). */
export type SqliteServices = Reached<SqliteStores> & Services;

export const VERSION = "0.1.0";

/**
 * Builds the parts once. `endpointOf` names the published endpoint of a path for the metrics' labels:
 * the endpoint table is http/'s, above this module.
 */
export function buildServices(config: Config, db: Db = openServerDatabase(config), endpointOf: (path: string) => string | null = () => null): SqliteServices {
  // The request log tells the metrics of its rows, and the metrics read the ledger's holds: the hooks reach parts built after the stores.
  let parts: SharedParts | undefined;
  const stores = openSqliteStores(config, db, { onRow: (r) => parts!.onRow(r) });
  parts = sharedParts(config, { ledger: stores.ledger, settings: stores.settings, commits: stores.commits, endpointOf });
  const metrics = parts.metrics;
  stores.commits.onCommit = (writes) => metrics.commitBatch(writes);
  const svc = withStores(config, parts, stores);
  parts.live.start(svc);
  return svc;
}

/**
 * One instance of a cluster on PostgreSQL (`[database] url`): the same parts on the PostgreSQL side
 * of each owner (store/open.ts).
 */
export async function buildPostgresServices(config: Config, endpointOf: (path: string) => string | null = () => null): Promise<Services> {
  let parts: SharedParts | undefined;
  const stores = await openPostgresStores(config, {
    onRow: (r) => parts!.onRow(r),
    onFence: (why) => parts!.cutoff.cut(why),
    // A notice may arrive before the parts are built: nothing rests yet, there is nothing to keep.
    onRest: (provider, keyHash, ms) => parts?.capacity.heard(provider, keyHash, ms),
    // Before the server is up the config just read is the one it starts on, as for a SIGHUP.
    onReloadAsked: (request) => void parts?.live.reload(request),
  });
  parts = sharedParts(config, { ledger: stores.ledger, settings: stores.settings, commits: stores.commits, endpointOf });
  parts.capacity.announce = stores.announceRest;
  // Every reload, however asked, is written on this instance's row for the fleet and the admin page to see.
  parts.live.reported = (outcome, request) =>
    void Promise.resolve(stores.ledger.recordReload(reloadRecord(outcome, request))).catch((e: unknown) => events.writeFailed("ledger", "recording a reload", e));
  const svc = withStores(config, parts, stores);
  parts.live.start(svc);
  return svc;
}

/** The parts and the stores as one set; the stores' stop runs after the parts' (what they buffer goes out first). */
function withStores<S extends Stores>(config: Config, parts: SharedParts, stores: S) {
  const { checkouts, topUps, atStop, announceRest: _announced, ...rest } = stores;
  const notices = new Notices(config, stores);
  // The ledger tells a key's budget reached once per period, on whichever instance refused first.
  const unsubscribe = events.onBudgetReached((b) => notices.budgetReached(b));
  // What is being sent gets a few seconds after the last request; the stores close after it.
  parts.atStop.push(async () => {
    unsubscribe();
    await notices.drain(5_000);
    notices.close();
  }, ...atStop);
  const issuer = issuerOf(config);
  const credited = (row: CheckoutSession) => {
    notices.credited(row.accountId, row.amountNano, "top_up", row.id);
    notices.receipt(row.accountId, async () => {
      const r = await checkouts.receiptOf(row.id);
      return r && { subject: `Receipt ${receiptNumber(r)} for your top-up of ${formatUsd(r.amountNano)} USD`, text: receiptText(r, issuer) };
    });
  };
  return { ...parts, ...rest, notices, payments: new Payments(checkouts, topUps, config.stripe ? new StripeCheckout(config.stripe) : null, credited) };
}

type SharedParts = ReturnType<typeof sharedParts>;

/** What both engines build alike: catalog, health, calibration, metrics, limiter, logs' listeners. */
function sharedParts(
  config: Config,
  { ledger, settings, commits, endpointOf }: { ledger: MoneyLedger; settings: CalibrationStore; commits: Commits; endpointOf: (path: string) => string | null },
) {
  const health = new Health();
  const catalog = buildCatalog(config);
  const live = new Live();
  // Its rows join the requests' writes while the server runs; the last ones are written at stop.
  const calibration = new Calibration(settings, (save) => commits.now(save));
  const metrics = new Metrics({
    holds: () => ({ count: ledger.holds.count, nano: ledger.holds.total }),
    // The running catalog's routes: a reload may add or drop some.
    routes: () => live.current().catalog.models.flatMap((m) => m.routes.map((r) => health.view(r.key))),
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
    live,
    calibration,
    limiter,
    throttles: accountThrottles(store),
    health,
    capacity: new Capacity(config.providers, catalog.models),
    providers: buildProviders(config.providers),
    version: VERSION,
    cutoff: new Cutoff(),
    accessLog,
    metrics,
    onRow,
    atStop,
  };
}

/**
 * The config a request runs on (docs/operations.md#reload). Each request takes `current()` once at
 * its start and keeps it to its end, so a reload never changes the prices, routes or limits of a
 * request or stream in flight. A reload swaps in a new set for the requests after it; what cannot
 * change while serving (listener, databases, connections built at start) is kept and named.
 */
export class Live {
  #current: Services | null = null;
  /** Reads the config again, as the server was started (its file, its --db); set by the server. */
  read: (() => Config) | null = null;
  /** One line per reload, applied or refused. */
  log: (line: string) => void = () => {};
  /** Each outcome, with the fleet's request that asked for it (null: SIGHUP or POST /reload). */
  reported: (outcome: ReloadOutcome, request: string | null) => void = () => {};

  start(first: Services): void {
    this.#current = first;
  }

  current(): Services {
    return this.#current!;
  }

  /** Re-reads and applies the config; a bad one (a one-line ConfigError) is refused and the running one kept. */
  reload(request: string | null = null): ReloadOutcome {
    const outcome = this.apply();
    this.reported(outcome, request);
    return outcome;
  }

  private apply(): ReloadOutcome {
    const running = this.current();
    let next: Config;
    let catalog: Catalog;
    let providers: Map<string, Provider>;
    try {
      if (!this.read) throw new ConfigError("this server was started without a config to read again");
      next = this.read();
      // Built before the swap: a catalog that cannot be built is refused like a bad file.
      catalog = buildCatalog(next);
      providers = reuseProviders(running.config, running.providers, next);
    } catch (e) {
      // Never thrown on: a SIGHUP's failure must not stop a serving process.
      const why = e instanceof ConfigError ? e.message : `unexpected error: ${(e as Error)?.message ?? String(e)}`;
      this.log(`gateway: reload refused, the running config is kept: ${why}`);
      return { reloaded: false, error: why };
    }
    // No start-only field feeds the catalog or the providers: both stand as built above.
    const needsRestart = RESTART_ONLY.filter((f) => JSON.stringify(f.value(next)) !== JSON.stringify(f.value(running.config))).map((f) => f.name);
    for (const f of RESTART_ONLY) f.keep(next, running.config);
    this.#current = { ...running, config: next, catalog, providers };
    const report = { reloaded: true as const, source: next.source, catalogVersion: catalog.version, models: catalog.models.length, providers: next.providers.length, needsRestart };
    this.log(`gateway: reloaded ${report.source}: catalog ${report.catalogVersion}, ${report.models} model(s), ${report.providers} provider(s)${needsRestart.length ? `; needs restart, kept as running: ${needsRestart.join(", ")}` : ""}`);
    return report;
  }
}

export type ReloadOutcome =
  | { reloaded: true; source: string; catalogVersion: string; models: number; providers: number; needsRestart: string[] }
  | { reloaded: false; error: string };

function reloadRecord(o: ReloadOutcome, request: string | null): ReloadRecord {
  return o.reloaded
    ? { request, reloaded: true, error: null, source: o.source, catalogVersion: o.catalogVersion, models: o.models, providers: o.providers, needsRestart: o.needsRestart }
    : { request, reloaded: false, error: o.error, source: null, catalogVersion: null, models: null, providers: null, needsRestart: [] };
}

/**
 * Settings read once at start (the listener, the databases and the connections, what the stores and
 * senders were built with): a reload names a change to one as needing a restart and keeps it.
 */
const RESTART_ONLY: { name: string; value: (c: Config) => unknown; keep: (next: Config, running: Config) => void }[] = [
  field("server.port", "port"),
  field("server.host", "host"),
  // The emails' links are built from it by the senders made at start; the Origin check follows them.
  field("server.public_url", "publicUrl"),
  field("server.database", "database"),
  field("database.url", "databaseUrl"),
  field("server.access_log", "accessLog"),
  field("server.shutdown_timeout_s", "shutdownTimeoutMs"),
  field("logs.retention_days", "logRetentionDays"),
  field("limits.store", "limitStore"),
  field("cluster", "cluster"),
  field("payments.stripe", "stripe"),
  field("email", "email"),
  field("notifications", "notifications"),
  {
    name: "dashboard.session_days",
    value: (c) => c.dashboard.sessionTtlMs,
    keep: (next, running) => void (next.dashboard = { ...next.dashboard, sessionTtlMs: running.dashboard.sessionTtlMs }),
  },
  {
    // Its route is registered at start or not at all; a new token or loopback rule applies at once.
    name: "server.metrics (off)",
    value: (c) => c.metrics.mode === "off",
    keep: (next, running) => void ((next.metrics.mode === "off") !== (running.metrics.mode === "off") && (next.metrics = running.metrics)),
  },
];

function field<K extends keyof Config>(name: string, key: K): (typeof RESTART_ONLY)[number] {
  return { name, value: (c) => c[key], keep: (next, running) => void (next[key] = running[key]) };
}

/** A provider whose config did not change keeps its object, and with it its keys' state (rests, calls in flight). */
function reuseProviders(running: Config, providers: Map<string, Provider>, next: Config): Map<string, Provider> {
  const same = (p: ProviderConfig) => JSON.stringify(running.providers.find((r) => r.id === p.id)) === JSON.stringify(p);
  const built = buildProviders(next.providers.filter((p) => !same(p)));
  return new Map(next.providers.map((p) => [p.id, built.get(p.id) ?? providers.get(p.id)!]));
}
