#!/usr/bin/env bun
import { ConfigError } from "../config/load.ts";
import { OperatorError } from "../operator-error.ts";
import { GatewayError } from "../errors.ts";
import { UsageError } from "./args.ts";
import { accountCommand } from "./account.ts";
import { keyCommand } from "./key.ts";
import { logsCommand, migrateCommand, pauseCommand } from "./admin.ts";
import { serveCommand } from "./serve.ts";

const HELP = `gateway: a self-hosted prepaid LLM API gateway

Usage:
  gateway serve [--config FILE] [--port N] [--db FILE]
  gateway migrate
  gateway account create --email E [--balance USD] [--password-stdin]
  gateway account credit --email E --usd N [--note T]
  gateway key create --email E [--name N] [--quota USD] [--models a,b] [--expires ISO8601] [--ip CIDR,…] [--rpm N]
  gateway key list --email E
  gateway key revoke ID
  gateway pause | resume
  gateway logs show REQUEST_ID | logs prune

Every command takes --json, --config FILE (or GATEWAY_CONFIG) and --db FILE.`;

const COMMANDS: Record<string, (argv: string[]) => Promise<void> | void> = {
  serve: serveCommand,
  migrate: migrateCommand,
  account: accountCommand,
  key: keyCommand,
  pause: (argv) => pauseCommand(argv, true),
  resume: (argv) => pauseCommand(argv, false),
  logs: logsCommand,
};

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === "help" || command === "--help" || command === "-h") {
    console.log(HELP);
    return command ? 0 : 1;
  }
  const run = COMMANDS[command];
  if (!run) {
    console.error(`gateway: unknown command '${command}' (see gateway --help)`);
    return 2;
  }
  try {
    await run(rest);
    return 0;
  } catch (e) {
    if (e instanceof UsageError || e instanceof ConfigError || e instanceof OperatorError || e instanceof GatewayError || e instanceof RangeError) {
      const json = rest.includes("--json");
      if (json) console.log(JSON.stringify({ error: e.message }));
      else console.error(`gateway: ${e.message}`);
      return 2;
    }
    throw e;
  }
}

if (import.meta.main) {
  const code = await main(process.argv.slice(2));
  // serve keeps running; every other command ends here.
  if (code !== 0 || process.argv[2] !== "serve") process.exit(code);
}
