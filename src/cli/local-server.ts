import { readFileSync } from "node:fs";
import { parse as parseToml } from "smol-toml";
import { ConfigError } from "../config/load.ts";
import { loopbackFor } from "../server.ts";
import { givenPort, UsageError } from "./args.ts";
import { loadInstallation } from "./context.ts";

const DEFAULT_PORT = 8080;

/**
 * The base URL of this installation's server as reached from this machine, for `gateway reload` and
 * `gateway healthcheck`: the port from --port, then PORT, then the config's [server] port (8080 by
 * default); the host from [server] host, loopback for every interface. A file the server would
 * refuse still says where it listens: read as plain TOML, so that reload reaches the server and
 * prints its refusal. A file whose port cannot be read at all gives its own reason, not a guess.
 */
export function localServer(values: { port?: string; config?: string; db?: string }): string {
  const given = givenPort(values.port, 1);
  let listen: { host: string; port: number | null };
  try {
    listen = loadInstallation(values);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    const raw = listenOfRawFile(values.config ?? process.env.GATEWAY_CONFIG);
    if (!raw || (raw.port === null && given === null)) throw e;
    listen = raw;
  }
  const port = given ?? listen.port;
  // Port 0 has the server take any free port, which only its listening line names.
  if (!port) throw new UsageError("[server] port is 0 (any free port): give the one the server printed with --port");
  return `http://${loopbackFor(listen.host)}:${port}`;
}

/** [server] host and port as written (port null when it is not a port), or null when the file is not TOML. */
function listenOfRawFile(file: string | undefined): { host: string; port: number | null } | null {
  if (!file) return null;
  let server: { host?: unknown; port?: unknown };
  try {
    server = ((parseToml(readFileSync(file, "utf8")) as { server?: unknown }).server ?? {}) as typeof server;
  } catch {
    return null;
  }
  const host = typeof server.host === "string" && !server.host.includes("${") ? server.host : "0.0.0.0";
  const port = server.port === undefined ? DEFAULT_PORT : Number.isInteger(server.port) ? (server.port as number) : null;
  return { host, port };
}
