import { buildCatalog } from "../catalog/catalog.ts";
import { loadConfig } from "../config/load.ts";
import { OperatorError } from "../core/operator-error.ts";
import { parse, UsageError } from "./args.ts";
import { localServer } from "./local-server.ts";

// The config of a running server without a restart (docs/operations.md#reload): `gateway reload`
// asks it to read its file again, `gateway config check` validates a file without serving.

export const RELOAD_USAGE = `Usage:
  gateway reload [--port N]

Asks the server on this machine to read its config file again, as SIGHUP does: POST /reload on
loopback (its host from [server] host; the port from --port, then PORT, then the config). Requests
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
  error?: string;
  source?: string;
  catalog_version?: string;
  models?: number;
  providers?: number;
  needs_restart?: string[];
}

export async function reloadCommand(argv: string[]): Promise<void> {
  const { values } = parse(argv, { port: { type: "string" } });
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
  if (!body.reloaded) throw new OperatorError(`reload refused, the running config is kept: ${body.error}`);
  const restart = body.needs_restart?.length ? `; needs restart, kept as running: ${body.needs_restart.join(", ")}` : "";
  console.log(values.json ? JSON.stringify(body) : `reloaded ${body.source}: catalog ${body.catalog_version}, ${body.models} model(s), ${body.providers} provider(s)${restart}`);
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
