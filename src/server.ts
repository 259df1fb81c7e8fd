import { gcAndSweep, heapSize } from "bun:jsc";
import type { Server } from "bun";
import { loadConfig, type Config } from "./config/load.ts";
import { acquireServeLock, dropPageCache, ensureDatabaseFolder, type Db } from "./store/database.ts";
import { dashboardPage } from "./dashboard/page.ts";
import { buildApp } from "./http/app.ts";
import { findEndpoint } from "./http/endpoints.ts";
import { events } from "./core/events.ts";
import { OperatorError } from "./core/operator-error.ts";
import { buildPostgresServices, buildServices, type ReloadOutcome, type Services, type SqliteServices } from "./services.ts";

export interface RunningGateway<S extends Services = Services> {
  /** A URL this process can reach the server on (loopback when it listens on every interface). */
  url: string;
  port: number;
  /** The address it really listens on, as an operator writes it: `0.0.0.0:8080`, `[::1]:8080`. */
  listening: string;
  services: S;
  /** Stops at once, closing open connections (tests). */
  stop(): Promise<void>;
  /** Reads the config again and serves the requests after it on it (SIGHUP, `gateway reload`); a bad one is refused. */
  reload(): ReloadOutcome;
  /** The operator's stop (SIGTERM): see `drain` below. */
  drain(timeoutMs: number, onCut?: (inFlight: number) => void): Promise<DrainReport>;
}

export interface DrainReport {
  /** Requests (streams included) still running when the stop began. */
  inFlight: number;
  /** Of those, the ones still running at the deadline, ended by the gateway. */
  cut: number;
}

const DAY_MS = 24 * 3600 * 1000;
/** After the deadline: how long streams get to send their final error event before connections are closed. */
const CUT_GRACE_MS = 3000;

/** Boots the gateway on SQLite: migrations, crash recovery, retention jobs, then the HTTP server. */
export function startGateway(config: Config, opts: ListenOptions & { db?: Db } = {}): RunningGateway<SqliteServices> {
  if (!opts.db) ensureDatabaseFolder(config.database);
  // Taken before anything is written: a refused second server must leave the running one's file alone.
  const lock = opts.db ? { release() {} } : acquireServeLock(config.database);
  let svc: SqliteServices;
  try {
    svc = buildServices(config, opts.db, (path) => findEndpoint(path)?.path ?? null);
  } catch (e) {
    lock.release();
    throw e;
  }
  svc.atStop.push(() => svc.db.$client.close(), () => lock.release());
  return listen(svc, config, opts, svc.idempotency.abandonInFlight(), () => dropPageCache(svc.db));
}

/**
 * Boots one instance of a cluster on PostgreSQL (`[database] url`): no serve lock (several instances
 * share the database; their holds are rows with their instance's id), then as on SQLite.
 */
export async function startGatewayOnPostgres(config: Config, opts: ListenOptions = {}): Promise<RunningGateway> {
  const svc = await buildPostgresServices(config, (path) => findEndpoint(path)?.path ?? null);
  return listen(svc, config, opts, await svc.idempotency.abandonInFlight());
}

/** How often an idle server looks at whether its heap grew since its last collection. */
const IDLE_CHECK_MS = 10_000;
/** Growth of the JavaScript heap since the last collection worth a full one once the server is idle. */
const IDLE_GROWTH_BYTES = 8 * 1024 * 1024;
/** Collections after a burst's, one per idle check, before the code it compiled is dropped. */
export const SETTLE_PASSES = 2;

/** The JavaScript heap as the idle collector sees it: injectable, so tests count what it asks for instead. */
export interface HeapControl {
  size(): number;
  /** The burst's collection: a full one, and mimalloc's free pages back to the system. */
  collect(): void;
  /** A later pass: a full collection swept at once, so what the last one's finalizers let go is freed too. */
  settle(): void;
  /** The last step: compiled code dropped, a full collection, the engine's free pages back to the system (and SQLite's page cache on SQLite). */
  shrink(): void;
}

const jscHeap: HeapControl = { size: heapSize, collect: () => Bun.gc(true), settle: () => gcAndSweep(), shrink: () => Bun.shrink() };

/**
 * Once a burst is over, nothing allocates, so nothing triggers a collection: what the burst left
 * (request bodies, parsed turns, streams' buffers) would be held until the next burst. A full
 * collection when no request is in flight and the heap has grown gives that memory back; it runs
 * once per burst, never under load (bench/RESULTS.md, many open streams).
 *
 * One collection leaves about 15 MiB over the process before the burst: the streams' native objects
 * let go of what they hold only when swept, and the code the burst compiled (with its metadata and
 * the engine's pages around it) stays until it is dropped. So, while the server stays idle, two more
 * swept collections follow, one per check, then the compiled code is dropped, the engine returns
 * its free pages and SQLite its page cache (bench/RESULTS.md, memory a minute after many streams). A request in flight at any
 * of those checks ends the sequence: the burst is not over, and code dropped under load would be
 * compiled again at once.
 */
export function idleCollector(server: { pendingRequests: number }, heap: HeapControl = jscHeap): () => void {
  let heapAfterCollection = heap.size();
  /**
   * The largest heap a check saw since the last collection: the engine's own collections during a
   * burst's drain can bring it back under the threshold before the first idle check.
   */
  let peak = heapAfterCollection;
  /** Steps left after a burst's collection: SETTLE_PASSES passes, then the shrink. */
  let stepsLeft = 0;
  return () => {
    peak = Math.max(peak, heap.size());
    if (server.pendingRequests > 0) {
      stepsLeft = 0;
      return;
    }
    if (peak - heapAfterCollection >= IDLE_GROWTH_BYTES) {
      heap.collect();
      stepsLeft = SETTLE_PASSES + 1;
    } else if (stepsLeft > 1) {
      heap.settle();
      stepsLeft--;
    } else if (stepsLeft === 1) {
      heap.shrink();
      stepsLeft = 0;
    } else return;
    heapAfterCollection = peak = heap.size();
  };
}

export interface ListenOptions {
  port?: number;
  quiet?: boolean;
  /**
   * A full collection once a burst is over (`gateway serve`). Off for servers started inside another
   * program (the tests), whose own allocations would make it run while their timers are measured.
   */
  collectWhenIdle?: boolean;
  /**
   * Tests only: how often the idle checks run (IDLE_CHECK_MS by default) and the heap they act on (the
   * engine's). The shrink step drops SQLite's page cache before the heap's own shrink either way.
   */
  idleChecks?: { everyMs?: number; heap?: HeapControl };
  /** How a reload reads the config again (serve's: its file and --db); by default the file it came from. */
  read?: () => Config;
}

/** The HTTP server on built services; their `atStop` runs once the last request has ended. */
function listen<S extends Services>(svc: S, config: Config, opts: ListenOptions, abandoned: number, dropCaches?: () => void): RunningGateway<S> {
  svc.live.read = opts.read ?? (() => loadConfig(config.source === "built-in defaults" ? undefined : config.source));
  if (!opts.quiet) svc.live.log = (line) => console.log(line);
  if (!opts.quiet && abandoned) {
    console.log(`gateway: released ${abandoned} idempotency claim(s) left by a stopped process`);
  }
  const prune = async () => {
    try {
      await svc.logs.prune();
      await svc.idempotency.prune();
    } catch (e) {
      events.pruneFailed(e);
    }
  };
  void prune();
  // Retention runs by itself; unref so it never keeps a stopping process alive.
  const timer = setInterval(prune, DAY_MS / 24);
  timer.unref();

  const port = opts.port ?? config.port;
  const app = buildApp(svc, {}, dashboardPage);
  try {
    app.listen({
      port,
      hostname: config.host,
      // Elysia turns it on; with it a second server on the same port silently takes half the traffic.
      reusePort: false,
      development: false,
      // The gateway enforces the 20 MiB limit itself, while the body streams in, with its own error body (docs/api.md#limits).
      maxRequestBodySize: Number.MAX_SAFE_INTEGER,
      idleTimeout: 255,
    });
  } catch (e) {
    clearInterval(timer);
    void stopServices(svc);
    throw listenError(e, config.host, port);
  }
  const server = app.server!;
  const base = opts.idleChecks?.heap ?? jscHeap;
  const shrink = () => {
    dropCaches?.();
    base.shrink();
  };
  const heap: HeapControl = { ...base, shrink };
  const collector = opts.collectWhenIdle ? setInterval(idleCollector(server, heap), opts.idleChecks?.everyMs ?? IDLE_CHECK_MS) : null;
  collector?.unref();
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    clearInterval(timer);
    if (collector) clearInterval(collector);
    await holdsResolved(svc);
    await stopServices(svc);
  };
  return {
    url: `http://${loopbackFor(config.host)}:${server.port}`,
    port: server.port!,
    listening: hostPort(server),
    services: svc,
    reload: () => svc.live.reload(),
    async stop() {
      await server.stop(true);
      await close();
    },
    async drain(timeoutMs, onCut) {
      const inFlight = server.pendingRequests;
      // Stops accepting at once; resolves when every request in flight, streams included, has ended.
      const stopped = server.stop(false);
      let cut = 0;
      if (!(await within(stopped, timeoutMs))) {
        cut = server.pendingRequests;
        onCut?.(cut);
        // Upstream calls still running end now: a stream sends its dialect's error event, a plain
        // request its error answer, and each releases its hold and writes its log row.
        svc.cutoff.abort(new Error("the gateway is shutting down"));
        if (!(await within(stopped, CUT_GRACE_MS))) await server.stop(true);
      }
      await close();
      return { inFlight, cut };
    },
  };
}

/** What is buffered goes out, then the databases close: each step runs even when one before it failed. */
async function stopServices(svc: Services): Promise<void> {
  for (const step of svc.atStop) {
    try {
      await step();
    } catch (e) {
      console.error(`gateway: at stop: ${(e as Error).message}`);
    }
  }
}

function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  return Promise.race([p.then(() => true), late]).finally(() => clearTimeout(timer));
}

/**
 * A hold resolves in its request's group commit, a turn or two after the response ended (a client
 * that went away resolves it in the stream's cancel). The database closes only after all of them.
 */
async function holdsResolved(svc: Services): Promise<void> {
  const deadline = Date.now() + 2000;
  do await new Promise((r) => setImmediate(r));
  while (svc.ledger.holds.count > 0 && Date.now() < deadline);
  await new Promise((r) => setImmediate(r));
}

/** A host as it is written before `:port`: IPv6 in brackets. */
export const bracketed = (host: string) => (host.includes(":") ? `[${host}]` : host);

/** "Every interface": reached from this machine on loopback. */
export const isUnspecified = (host: string) => host === "0.0.0.0" || host === "::" || host === "";

function hostPort(server: Server<unknown>): string {
  return `${bracketed(server.hostname ?? "0.0.0.0")}:${server.port}`;
}

export function loopbackFor(host: string): string {
  if (!isUnspecified(host)) return bracketed(host);
  return host === "::" ? "[::1]" : "127.0.0.1";
}

function listenError(e: unknown, host: string, port: number): Error {
  const code = (e as { code?: string }).code;
  if (code === "EADDRINUSE") return new OperatorError(`port ${port} is in use`);
  if (code === "EACCES") return new OperatorError(`cannot listen on ${host}:${port}: permission denied (ports below 1024 need privileges)`);
  if (code === "EADDRNOTAVAIL") return new OperatorError(`cannot listen on ${host}:${port}: no such address on this machine ([server] host)`);
  return new OperatorError(`cannot listen on ${host}:${port}: ${(e as Error).message}`);
}
