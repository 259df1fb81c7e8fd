import type { Config } from "./config/load.ts";
import type { Db } from "./db/client.ts";
import { acquireServeLock } from "./db/serve-lock.ts";
import { buildApp } from "./http/app.ts";
import { buildServices, type Services } from "./services.ts";

export interface RunningGateway {
  url: string;
  port: number;
  services: Services;
  stop(): Promise<void>;
}

const DAY_MS = 24 * 3600 * 1000;

/** Boots the gateway: migrations, crash recovery, retention jobs, then the HTTP server. */
export function startGateway(config: Config, opts: { port?: number; db?: Db; quiet?: boolean } = {}): RunningGateway {
  // Taken before anything is written: a refused second server must leave the running one's file alone.
  const lock = opts.db ? { release() {} } : acquireServeLock(config.database);
  let svc: Services;
  try {
    svc = buildServices(config, opts.db);
  } catch (e) {
    lock.release();
    throw e;
  }
  const abandoned = svc.idempotency.abandonInFlight();
  if (!opts.quiet && abandoned) {
    console.log(`gateway: released ${abandoned} idempotency claim(s) left by a stopped process`);
  }
  const prune = () => {
    svc.logs.prune();
    svc.idempotency.prune();
  };
  prune();
  // Retention runs by itself; unref so it never keeps a stopping process alive.
  const timer = setInterval(prune, DAY_MS / 24);
  timer.unref();

  const app = buildApp(svc);
  app.listen({
    port: opts.port ?? config.port,
    hostname: config.host,
    // The gateway enforces the spec's 20 MiB limit itself, while the body streams in, with the spec's error body.
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    idleTimeout: 255,
  });
  const server = app.server!;
  return {
    url: `http://${config.host === "0.0.0.0" ? "127.0.0.1" : config.host}:${server.port}`,
    port: server.port!,
    services: svc,
    async stop() {
      clearInterval(timer);
      await app.stop(true);
      svc.db.$client.close();
      lock.release();
    },
  };
}
