import type { Catalog } from "../catalog/catalog.ts";
import type { Config } from "../config/load.ts";
import { formatUsd } from "../core/money.ts";
import { redactUrl } from "../store/database.ts";
import { bracketed, isUnspecified, startGateway, startGatewayOnPostgres, type RunningGateway } from "../server.ts";
import type { Services } from "../services.ts";
import { givenPort, invocation, parse } from "./args.ts";
import { loadInstallation } from "./context.ts";
import { derivedPriceLines } from "./prices.ts";

export const DEMO_EMAIL = "demo@gateway.local";

export async function serveCommand(argv: string[]): Promise<void> {
  const { values } = parse(argv, { port: { type: "string" } });
  const config = loadInstallation(values, { need: "secrets" });
  // --port beats PORT, which beats the config file (docs/operations.md#start).
  const port = givenPort(values.port, 0) ?? config.port;
  // Installed before the start: Bun installs a handler a moment after process.on returns, and a
  // signal in between (a supervisor's HUP right after the listening line) must not be lost.
  const signals = handleSignals(config.shutdownTimeoutMs);
  // A reload reads the file again as this start did: the same --config and --db.
  const read = () => loadInstallation(values);
  const gw = config.databaseUrl ? await startGatewayOnPostgres(config, { port, read, collectWhenIdle: true }) : startGateway(config, { port, read, collectWhenIdle: true });
  signals.serving(gw);
  const svc = gw.services;
  const base = config.publicUrl || `http://${linkHost(config.host)}:${gw.port}`;
  const database = config.databaseUrl ? redactUrl(config.databaseUrl) : config.database;
  const empty = (await svc.accounts.count()) === 0;
  // A demo key on real providers would be 1 USD of real spend printed into `docker logs`.
  const firstKey = empty && servesDemoOnly(svc.catalog) ? await demoKey(svc) : null;
  const alone = limitsAloneWarning(config);
  if (alone) console.error(alone);
  if (values.json) {
    console.log(JSON.stringify({ listening: base, address: gw.listening, port: gw.port, database, config: config.source, catalog_version: svc.catalog.version, first_key: firstKey }));
  } else {
    console.log(`gateway ${svc.version} listening on ${base} (address ${gw.listening}; config: ${config.source}; database: ${database})`);
    const fetchLimit = fetchLimitWarning(process.env.BUN_CONFIG_MAX_HTTP_REQUESTS);
    if (fetchLimit) console.error(fetchLimit);
    for (const line of derivedPriceLines(svc.catalog)) console.log(line);
    const open = openRegistrationWarning(config, svc.catalog);
    if (open) console.log(open);
    if (firstKey) console.log(firstRunBanner(base, firstKey, demoModel(svc.catalog)));
    else if (empty) console.log(firstAccountHint());
  }
}

/**
 * Bun's fetch runs 256 requests at once and queues the rest silently; a stream keeps its slot while
 * it runs, so past 256 open streams new clients would wait with nothing sent. The variable is read
 * when the process starts, so it can only be set around it (package.json, the image, the unit).
 */
export function fetchLimitWarning(value: string | undefined): string | null {
  const n = Number(value);
  if (value !== undefined && Number.isInteger(n) && n >= 1024) return null;
  return `gateway: BUN_CONFIG_MAX_HTTP_REQUESTS is ${value === undefined ? "not set" : value}: Bun runs at most ${value === undefined ? 256 : value} upstream calls at once and queues the rest; start with BUN_CONFIG_MAX_HTTP_REQUESTS=4096 (docs/operations.md)`;
}

/**
 * On PostgreSQL, several instances may serve one database; without `[limits] store` each counts its
 * own buckets and throttles, so behind N instances a key gets N times its rpm. A single instance on
 * PostgreSQL is fine, so this is a warning, not a refusal.
 */
export function limitsAloneWarning(config: Pick<Config, "databaseUrl" | "limitStore">): string | null {
  if (!config.databaseUrl || config.limitStore) return null;
  return "gateway: [database] url without [limits] store: rate limits are counted by each instance on its own (and the dashboard's login throttles), so behind N instances a key gets N times its rpm; set [limits] store to share them (docs/scaling.md#the-config-lines)";
}

/**
 * The first start's demo account and its key. Instances of a cluster starting together may race for
 * it: the email is unique, so one creates it and the others find it taken and print no key.
 */
async function demoKey(svc: Services): Promise<string | null> {
  let acc;
  try {
    acc = await svc.accounts.create(DEMO_EMAIL);
  } catch (e) {
    if (await svc.accounts.find(DEMO_EMAIL)) return null;
    throw e;
  }
  return (await svc.keys.create(acc.id, { name: "first key" })).key;
}

/** The host to print in links: every interface is reached as localhost from the operator's shell. */
function linkHost(host: string): string {
  return isUnspecified(host) ? "localhost" : bracketed(host);
}

/**
 * Open registration on real providers gives whoever reaches the URL the starting credit in real
 * spend: one line at start, so the choice is the operator's and not the default's.
 */
export function openRegistrationWarning(config: Config, catalog: Catalog): string | null {
  if (config.dashboard.registration !== "open" || servesDemoOnly(catalog)) return null;
  const each = formatUsd(config.dashboard.startingCreditNano);
  const daily = formatUsd(config.dashboard.startingCreditDailyNano);
  return `gateway: registration is open on real providers: anyone reaching ${config.publicUrl || "this server"} gets ${each} USD of provider spend (at most ${daily} USD a day for all); set [dashboard] registration = "invite" or "closed" to stop it (docs/operations.md#registration)`;
}

function servesDemoOnly(catalog: Catalog): boolean {
  return catalog.models.every((m) => m.routes.every((r) => r.provider.kind === "demo"));
}

const demoModel = (catalog: Catalog) =>
  catalog.models.find((m) => m.endpoints.includes("messages") || m.endpoints.includes("chat.completions"))?.id ?? "demo-text-1";

/**
 * SIGTERM and SIGINT stop the way an orchestrator expects: no new connections, requests and streams
 * in flight finish up to the deadline, the rest end with an error event and free holds, the database
 * closes, exit 0. A second signal cuts at once. SIGHUP reads the config again (docs/operations.md#reload):
 * the requests after it run on the new one, those in flight finish on theirs; a bad file is refused.
 */
function handleSignals(timeoutMs: number): { serving(gw: RunningGateway): void } {
  let stopping = false;
  let gw: RunningGateway | null = null;
  const stop = async (signal: string) => {
    // Before the server is up there is nothing to drain.
    if (!gw) process.exit(0);
    if (stopping) {
      console.log(`gateway: ${signal} again: ending the requests in flight now`);
      gw.services.cutoff.abort(new Error("the gateway is shutting down"));
      return;
    }
    stopping = true;
    console.log(`gateway: ${signal}: stopping; ${gw.services.ledger.holds.count} paid request(s) in flight, waiting up to ${timeoutMs / 1000} s`);
    const report = await gw.drain(timeoutMs, (cut) => console.log(`gateway: deadline passed; ending ${cut} request(s) still running`));
    console.log(`gateway: stopped (${report.inFlight} request(s) were in flight, ${report.cut} ended at the deadline); database closed`);
    process.exit(0);
  };
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGHUP", () => {
    // Before the server is up the config just read is the one it starts on; while stopping there is nothing to change.
    if (!gw || stopping) return void console.log(`gateway: SIGHUP ignored: ${gw ? "stopping" : "starting"}`);
    gw.reload();
  });
  return {
    serving(running) {
      gw = running;
    },
  };
}

function firstAccountHint(): string {
  // The form that works for how this process was started: the binary, or `bun run gateway` in a checkout.
  const gw = invocation();
  return `
No accounts yet, and the catalog uses real providers, so no demo key was made. Create the first one:

  ${gw} account create --email you@example.com            # starts with the starting balance, 1 USD
  ${gw} key create --email you@example.com --name first   # prints the key once
`;
}

function firstRunBanner(base: string, key: string, model: string): string {
  return `
First start: created the account ${DEMO_EMAIL} with 1 USD and this API key (shown once, store it now):

  ${key}

Try it:

  curl ${base}/v1/chat/completions \\
    -H "Authorization: Bearer ${key}" -H "content-type: application/json" \\
    -d '{"model":"${model}","max_tokens":100,"messages":[{"role":"user","content":"Hello"}]}'

  # openai SDK:            new OpenAI({ baseURL: "${base}/v1", apiKey: "${key}" })
  # @anthropic-ai/sdk:     new Anthropic({ baseURL: "${base}", apiKey: "${key}" })
`;
}
