#!/usr/bin/env bun
import { ConfigError } from "../config/load.ts";
import { OperatorError } from "../core/operator-error.ts";
import { GatewayError } from "../core/errors.ts";
import { describe, stackOf } from "../core/events.ts";
import { VERSION } from "../services.ts";
import { invocation, UnknownOptionError, UsageError } from "./args.ts";
import { openedDatabase } from "./context.ts";
import { ACCOUNT_USAGE, accountCommand } from "./account.ts";
import { KEY_USAGE, keyCommand } from "./key.ts";
import { migrateCommand, pauseCommand } from "./admin.ts";
import { LOGS_USAGE, logsCommand, USAGE_USAGE, usageCommand } from "./logs.ts";
import { serveCommand } from "./serve.ts";
import { MIGRATE_DB_USAGE, migrateDbCommand } from "./migrate-db.ts";
import { healthcheckCommand } from "./healthcheck.ts";
import { PRICES_USAGE, pricesCommand } from "./prices.ts";
import { CODE_USAGE, codeCommand } from "./code.ts";
import { CONFIG_USAGE, configCommand, RELOAD_USAGE, reloadCommand } from "./reload.ts";

const COMMON = `Every command takes --json (one JSON document on stdout; money as numbers of USD), --config FILE
(or GATEWAY_CONFIG) and --db FILE (or GATEWAY_DB; the flag wins, then the variable, then the config's
[server] database), after its words or before the command (gateway --db FILE key list …). Each names
the database it used on stderr. Only serve and migrate create a database; list, find, show and usage
open it read-only and never migrate it.`;

const HELP = `gateway ${VERSION}: a self-hosted prepaid LLM API gateway

Usage:
  gateway serve [--config FILE] [--port N] [--db FILE]
  gateway migrate
  gateway migrate-db --from FILE --to postgres://…      # copy an installation to PostgreSQL, proved
  gateway account create --email E [--balance USD] [--password-stdin] [--admin]
  gateway account update --email E [--admin|--no-admin] [--password-stdin] [--reset-2fa]
  gateway account credit --email E --usd N [--note T] [--idempotency-key K]
  gateway account debit --email E --usd N --note T [--idempotency-key K]
  gateway account list | account show --email E
  gateway account note --email E --text T              # the operator's note on the account ("" removes it)
  gateway account disable --email E | account enable --email E
  gateway key create --email E [--name N] [--quota USD] [--budget USD --budget-period day|week|month] [--models a,b] [--expires ISO8601] [--ip CIDR,…] [--rpm N]
  gateway key list --email E | key find PREFIX|KEY | key revoke ID
  gateway key update ID [--name N] [--quota USD|none] [--budget USD|none --budget-period day|week|month] [--models a,b|none] [--expires ISO8601|none] [--ip CIDR,…|none] [--rpm N|none]
  gateway code create --usd N [--count K] [--expires ISO8601] [--note T]   # redemption codes, printed once
  gateway code list
  gateway pause | resume
  gateway logs show REQUEST_ID | logs prune
  gateway logs list [--account EMAIL] [--key ID|PREFIX] [--model M] [--status N|4xx|5xx] [--since ISO8601|24h] [--limit N] [--csv]
  gateway usage [--account EMAIL] [--since ISO8601|30d] [--csv]
  gateway usage --calibration [--csv]                 # the token estimator per model
  gateway prices [--check]                            # every model's effective prices and their sources;
                                                      # --check: exit 1 when one is below the provider's list price
  gateway healthcheck [--port N]                     # GET /healthz on loopback: exit 0 when healthy
  gateway reload [--local] [--port N]                 # the running server reads its config again (as SIGHUP);
                                                      # on PostgreSQL every instance, --local this machine's only
  gateway config check FILE | --config FILE           # validate a config file without serving
  gateway --version | gateway COMMAND --help

account create without --balance credits the starting balance of 1 USD.

${COMMON}`;

const COMMAND_HELP: Record<string, string> = {
  serve: `Usage:
  gateway serve [--config FILE] [--port N] [--db FILE]

Runs the gateway: creates the database (and its folder) when missing, applies migrations, listens on
[server] host and port (--port, then PORT, then the config; 8080 by default).`,
  migrate: `Usage:
  gateway migrate

Creates the database when missing and applies the migrations this version carries (serve does too).
Refused while a 'gateway serve' runs on the SQLite file: stop it first.
With [database] url set, applies the PostgreSQL migrations to that database instead (it must exist).`,
  "migrate-db": MIGRATE_DB_USAGE,
  account: ACCOUNT_USAGE,
  key: KEY_USAGE,
  code: CODE_USAGE,
  pause: `Usage:
  gateway pause | gateway resume

The product switch: while paused, key routes answer 503 product_paused with Retry-After: 60.`,
  logs: LOGS_USAGE,
  usage: USAGE_USAGE,
  prices: PRICES_USAGE,
  reload: RELOAD_USAGE,
  config: CONFIG_USAGE,
  healthcheck: `Usage:
  gateway healthcheck [--port N]

Asks the server on this machine for GET /healthz (on loopback, or [server] host when it names one
address; the port from --port, then PORT, then the config, else 8080): exit 0 when it answers 200,
else one line and a non-zero exit. The container image's HEALTHCHECK runs it.`,
};
COMMAND_HELP.resume = COMMAND_HELP.pause!;

/** A command's exit status when it has one besides 0 (prices --check: 1 when a price is below cost). */
const COMMANDS: Record<string, (argv: string[]) => Promise<number | void> | number | void> = {
  serve: serveCommand,
  migrate: migrateCommand,
  "migrate-db": migrateDbCommand,
  account: accountCommand,
  key: keyCommand,
  code: codeCommand,
  pause: (argv) => pauseCommand(argv, true),
  resume: (argv) => pauseCommand(argv, false),
  logs: logsCommand,
  usage: usageCommand,
  prices: pricesCommand,
  healthcheck: healthcheckCommand,
  reload: reloadCommand,
  config: configCommand,
};

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = commonOptionsLast(argv);
  if (!command || command === "help" || command === "--help" || command === "-h") {
    console.log(HELP);
    return 0;
  }
  if (command === "--version" || command === "-v" || command === "version") {
    console.log(`gateway ${VERSION}`);
    return 0;
  }
  const run = COMMANDS[command];
  if (!run) {
    console.error(`gateway: unknown command '${command}' (see ${invocation()} --help)`);
    return 2;
  }
  if (rest.includes("--help") || rest.includes("-h")) {
    console.log(`${COMMAND_HELP[command]}\n\n${COMMON}`);
    return 0;
  }
  try {
    return (await run(rest)) ?? 0;
  } catch (e) {
    const known = e instanceof UsageError || e instanceof ConfigError || e instanceof OperatorError || e instanceof GatewayError || e instanceof RangeError;
    // SQLite's own refusals (a read-only or full file) are the operator's to fix, not a bug: one line naming the file.
    const sqlite = (e as Error)?.name === "SQLiteError";
    if (!known && !sqlite) {
      // A bug, not the operator's doing: still one line (a minified binary's stack is unreadable), the stack on request.
      if (process.env.GATEWAY_DEBUG) console.error(e instanceof Error && e.stack ? stackOf(e) : e);
      console.error(unexpectedErrorLine(e));
      return 1;
    }
    if (e instanceof UnknownOptionError) {
      const name = commandName(command, rest);
      const line = `unknown option ${e.option} for 'gateway ${name}'; see ${invocation()} ${name} --help`;
      if (rest.includes("--json")) console.log(JSON.stringify({ error: line }));
      else console.error(`gateway: ${oneLine(line)}`);
      return 2;
    }
    const message = sqlite && openedDatabase ? `${openedDatabase}: ${(e as Error).message}` : (e as Error).message;
    if (rest.includes("--json")) console.log(JSON.stringify({ error: message }));
    else console.error(`gateway: ${oneLine(message)}`);
    return 2;
  }
}

/** A reason that echoes the operator's input stays one line: control characters written as escapes (\n). */
function oneLine(text: string): string {
  return text.replace(/[\u0000-\u001f]/g, (c) => JSON.stringify(c).slice(1, -1));
}

/**
 * The one line a bug prints. Through the event log's `describe`: a failed query's message carries its
 * parameters (a password's hash, an email), which never reach a terminal or a log.
 */
export function unexpectedErrorLine(e: unknown): string {
  return `gateway: unexpected error: ${describe(e)} (run with GATEWAY_DEBUG=1 for the stack)`;
}

/**
 * The options every command takes may come first, as scripts write them (`gateway --db FILE --json
 * key list …`): moved after the command's words, where each command reads them.
 */
function commonOptionsLast(argv: string[]): string[] {
  const leading: string[] = [];
  let i = 0;
  for (; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--json") leading.push(a);
    else if (/^--(config|db)=/.test(a)) leading.push(a);
    else if ((a === "--config" || a === "--db") && i + 1 < argv.length) leading.push(a, argv[++i]!);
    else break;
  }
  return [...argv.slice(i), ...leading];
}

/** Commands whose first word is a subcommand (key create, logs show…). */
const WITH_SUBCOMMANDS = new Set(["account", "key", "code", "logs"]);

function commandName(command: string, rest: string[]): string {
  const sub = rest[0];
  return WITH_SUBCOMMANDS.has(command) && sub && !sub.startsWith("-") ? `${command} ${sub}` : command;
}

if (import.meta.main) {
  const code = await main(process.argv.slice(2));
  // serve keeps running; every other command ends here.
  if (code !== 0 || commonOptionsLast(process.argv.slice(2))[0] !== "serve") process.exit(code);
}
