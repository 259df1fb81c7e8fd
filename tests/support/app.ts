import { rmSync } from "node:fs";
import type { Config } from "../../src/config/load.ts";
import { buildApp } from "../../src/http/app.ts";
import { buildServices, type Services, type SqliteServices } from "../../src/services.ts";
import { accountsOf, testConfig, type Accounts } from "./gateway.ts";

// The gateway without a socket: the same services and app the server builds, asked through
// app.handle(Request). For what does not depend on the network (routing, 404/405/CORS/HEAD/OPTIONS,
// request checks, public GETs, error shapes); streaming to a client, disconnects, uploads, SDK clients
// and client addresses keep the real server (support/gateway.ts).

export interface AppGateway extends Accounts {
  /** The base of the requests' URLs; nothing listens there. */
  url: string;
  config: Config;
  services: SqliteServices;
  /** One request through the app, as the server would hand it over (support/http.ts `send`). */
  handle(request: Request): Promise<Response>;
  stop(): Promise<void>;
}

/** The app over a fresh SQLite file; `config` as for startTestGateway. */
export async function startAppGateway(config: Record<string, unknown> = {}): Promise<AppGateway> {
  const { config: cfg, dir } = testConfig(config);
  const services = buildServices(cfg);
  const app = buildApp(services);
  return {
    ...accountsOf(services),
    url: "http://gateway.test",
    config: cfg,
    services,
    handle: (request) => app.handle(request),
    async stop() {
      await holdsResolved(services);
      for (const step of services.atStop) await step();
      services.db.$client.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A hold resolves in its request's group commit, a turn or two after the answer was read, and the
 * last log rows commit a turn later: the database closes only after both, as the server's stop does.
 */
async function holdsResolved(svc: Services): Promise<void> {
  const turn = () => new Promise((r) => setImmediate(r));
  const deadline = Date.now() + 2000;
  do await turn();
  while (svc.ledger.holds.count > 0 && Date.now() < deadline);
  await turn();
}
