import { buildCatalog } from "../catalog/catalog.ts";
import { readFileSync } from "node:fs";
import { parse as parseToml } from "smol-toml";
import { ConfigError, loadConfig, parseConfig, type Config } from "../config/load.ts";
import { OperatorError } from "../core/operator-error.ts";
import type { ReloadRecord } from "../store/ledger/contract.ts";
import { parse, UsageError } from "./args.ts";
import { loadInstallation, openPostgresInstallation, output } from "./context.ts";
import { localServer } from "./local-server.ts";

// The config of a running server without a restart (docs/operations.md#reload): `gateway reload`
// asks it to read its file again, `gateway config check` validates a file without serving.

export const RELOAD_USAGE = `Usage:
  gateway reload [--local] [--port N]

Asks the server on this machine to read its config file again, as SIGHUP does: POST /reload on
loopback (its host from [server] host; the port from --port, then PORT, then the config). With
[database] url (PostgreSQL), asks every instance heartbeating on the database instead, through a
notice: each reads its own config file again and writes the outcome on its row; one line per
instance (reloaded, refused with its reason, or no answer within 10 s), exit 0 only when every one
reloaded. --local (or --port) asks only the server on this machine, and names its instance. Requests
after it run on the new catalog, prices, providers, limits and dashboard settings; those in flight
finish on theirs. A bad file is refused with its one-line reason (exit 2) and the running config kept
(a file too broken to name its port gives that reason without asking the server).
Settings read only at start (port, host, database, …) are named as needing a restart.`;

export const CONFIG_USAGE = `Usage:
  gateway config check FILE      (or --config FILE)

Validates FILE as serve would read it, without serving or opening the database: exit 0 with a
one-line summary, or exit 2 with the one-line reason. Provider and payment secrets may be left unset.`;

const TIMEOUT_MS = 10_000;

interface Reloaded {
  reloaded: boolean;
  /** The `[cluster] instance_id` that reloaded; null on SQLite. */
  instance?: string | null;
  error?: string;
  source?: string;
  catalog_version?: string;
  models?: number;
  providers?: number;
  needs_restart?: string[];
}

export async function reloadCommand(argv: string[]): Promise<number | void> {
  const { values } = parse(argv, { port: { type: "string" }, local: { type: "boolean" } });
  const fleet = values.local || values.port !== undefined ? null : postgresConfig(values);
  if (fleet) return reloadFleet(fleet, values.json ?? false);
  // Only where the server listens is read here (its secrets are the server's to resolve).
  const url = `${localServer(values)}/reload`;
  let res: Response;
  try {
    res = await fetch(url, { method: "POST", signal: AbortSignal.timeout(TIMEOUT_MS) });
  } catch (e) {
    const err = e as { code?: string; name?: string; message?: string };
    const why = err.code === "ECONNREFUSED" ? "connection refused (is the gateway running on this port?)" : err.name === "TimeoutError" ? `no answer within ${TIMEOUT_MS / 1000} s` : (err.message ?? String(e)).split("\n")[0];
    throw new OperatorError(`reload: ${url}: ${why}`);
  }
  const body = (await res.json().catch(() => null)) as Reloaded | null;
  if (!body || typeof body.reloaded !== "boolean") throw new OperatorError(`reload: ${url} answered ${res.status}, not a gateway's reload`);
  if (!body.reloaded) throw new OperatorError(`reload refused${body.instance ? ` by instance ${body.instance}` : ""}, the running config is kept: ${body.error}`);
  const restart = body.needs_restart?.length ? `; needs restart, kept as running: ${body.needs_restart.join(", ")}` : "";
  const which = body.instance ? ` instance ${body.instance}:` : "";
  console.log(values.json ? JSON.stringify(body) : `reloaded${which} ${body.source}: catalog ${body.catalog_version}, ${body.models} model(s), ${body.providers} provider(s)${restart}`);
}

/**
 * The installation's config when it is on PostgreSQL, else null. A file this machine cannot load (the
 * very file being reloaded, broken) still names its database: its [database] section is read alone,
 * so that the instances are asked and their refusals printed, as the local path prints the server's.
 */
function postgresConfig(values: { config?: string; db?: string }): Config | null {
  try {
    const config = loadInstallation(values);
    return config.databaseUrl ? config : null;
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    const file = values.config ?? process.env.GATEWAY_CONFIG;
    try {
      const raw = parseToml(readFileSync(file!, "utf8")) as { database?: unknown };
      const config = parseConfig({ database: raw.database }, file!, process.env, { unsetSecrets: "keep" });
      return config.databaseUrl ? config : null;
    } catch {
      return null;
    }
  }
}

/** How often the fleet's rows are read for the answers. */
const POLL_MS = 100;

/**
 * Every instance on the PostgreSQL database reloads its own config file (docs/scaling.md#reloading-the-fleet):
 * one notice, then the instances' rows until each running at the ask has written its outcome for it.
 */
async function reloadFleet(config: Config, json: boolean): Promise<number> {
  const ctx = await openPostgresInstallation(config, json);
  const asked = (await ctx.ledger.instances()).map((i) => i.id);
  if (asked.length === 0) throw new OperatorError(`reload: no instance is heartbeating on ${ctx.database}: nothing to reload`);
  const request = await ctx.askReload!();
  const answers = new Map<string, ReloadRecord>();
  const deadline = Date.now() + TIMEOUT_MS;
  while (answers.size < asked.length && Date.now() < deadline) {
    await Bun.sleep(POLL_MS);
    for (const i of await ctx.ledger.instances()) if (i.lastReload?.request === request && asked.includes(i.id)) answers.set(i.id, i.lastReload);
  }
  const rows = asked.map((id) => ({ id, answer: answers.get(id) ?? null }));
  const data = {
    request,
    instances: rows.map(({ id, answer: a }) =>
      a
        ? { instance: id, answered: true, reloaded: a.reloaded, error: a.error, source: a.source, catalog_version: a.catalogVersion, models: a.models, providers: a.providers, needs_restart: a.needsRestart }
        : { instance: id, answered: false },
    ),
  };
  const lines = rows.map(({ id, answer: a }) => `${id}: ${a ? answerLine(a) : `no answer within ${TIMEOUT_MS / 1000} s (reload it on its machine: SIGHUP, or gateway reload --local)`}`);
  const refused = rows.filter((r) => r.answer && !r.answer.reloaded).length;
  const silent = rows.filter((r) => !r.answer).length;
  output(ctx, data, lines.join("\n"));
  if (refused + silent === 0) return 0;
  // Every instance's line either way; the exit says that the fleet does not run one config now.
  if (!json) console.error(`gateway: reload: ${asked.length - refused - silent} of ${asked.length} instance(s) reloaded; ${refused} refused, ${silent} did not answer`);
  return 2;
}

function answerLine(a: ReloadRecord): string {
  if (!a.reloaded) return `reload refused, the running config is kept: ${a.error}`;
  const restart = a.needsRestart.length ? `; needs restart, kept as running: ${a.needsRestart.join(", ")}` : "";
  return `reloaded ${a.source}: catalog ${a.catalogVersion}, ${a.models} model(s), ${a.providers} provider(s)${restart}`;
}

export function configCommand(argv: string[]): void {
  const [sub, ...rest] = argv;
  if (sub !== "check") throw new UsageError("config needs: check FILE (see gateway config --help)");
  const { values, words } = parse(rest, {}, ["file"]);
  // --config, which every command takes, names the file too; two different files would leave one unchecked.
  if (words.file && values.config && words.file !== values.config) throw new UsageError("config check takes FILE or --config FILE, not both");
  const file = words.file ?? values.config;
  if (!file) throw new UsageError("config check needs a FILE");
  // A file checked on a build machine or before the secrets are in place: only the secrets may be unset.
  const config = loadConfig(file, process.env, { unsetSecrets: "keep" });
  const catalog = buildCatalog(config);
  const summary = { ok: true, source: config.source, catalog_version: catalog.version, models: catalog.models.length, providers: config.providers.length };
  console.log(values.json ? JSON.stringify(summary) : `OK ${config.source}: catalog ${catalog.version}, ${summary.models} model(s), ${summary.providers} provider(s)`);
}
