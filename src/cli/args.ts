import { parseArgs } from "node:util";
import { usdToNano } from "../core/money.ts";
import { readIsoTime } from "../core/time.ts";

export class UsageError extends Error {}

/** A flag the command does not take: main names the command in the one line it prints. */
export class UnknownOptionError extends UsageError {
  constructor(readonly option: string) {
    super(`unknown option ${option}`);
  }
}

/** How the operator started this CLI, for hints that name a command: the compiled binary, or a checkout run by bun. */
export function invocation(): string {
  // A compiled binary's modules live in Bun's embedded file system.
  if (import.meta.path.includes("$bunfs") || import.meta.path.includes("~BUN")) return "gateway";
  // An installed package's bin link is named gateway; a checkout runs src/cli/main.ts through its package script.
  return /(^|[\\/])gateway$/.test(process.argv[1] ?? "") ? "gateway" : "bun run gateway";
}

export const COMMON_OPTIONS = {
  json: { type: "boolean" },
  config: { type: "string" },
  db: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

type OptionTable = Record<string, { type: "string" | "boolean"; short?: string }>;

/**
 * Parses flags strictly: an unknown flag, a missing value or a word too many is a one-line error,
 * not a guess. `words` names the positional arguments the command takes, in order.
 */
export function parse<S extends OptionTable>(argv: string[], table: S, words: string[] = []) {
  const options = { ...COMMON_OPTIONS, ...table };
  let parsed;
  try {
    parsed = parseArgs({ args: joinNegativeValues(argv, options), options, allowPositionals: true, strict: true });
  } catch (e) {
    // Node's own text quotes the option and a '--' hint with an unclosed quote: one clean line instead.
    if ((e as { code?: string }).code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
      throw new UnknownOptionError(/'([^']+)'/.exec((e as Error).message)?.[1] ?? "?");
    }
    throw new UsageError((e as Error).message.split("\n")[0]!);
  }
  const extra = parsed.positionals[words.length];
  if (extra !== undefined) throw new UsageError(`unexpected argument '${extra}'`);
  return { values: parsed.values, words: Object.fromEntries(words.map((w, i) => [w, parsed.positionals[i]])) as Record<string, string | undefined> };
}

// parseArgs takes `--usd -1` for two flags; joined as `--usd=-1`, the value reaches its own check,
// which says what is wrong with it (negative amounts are refused there, by name).
function joinNegativeValues(argv: string[], options: OptionTable): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const next = argv[i + 1];
    if (a.startsWith("--") && !a.includes("=") && options[a.slice(2)]?.type === "string" && next !== undefined && /^-\d/.test(next)) {
      out.push(`${a}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

export function required(values: Record<string, unknown>, name: string): string {
  const v = values[name];
  if (typeof v !== "string" || v === "") throw new UsageError(`--${name} is required`);
  return v;
}

/**
 * A USD amount from a flag, in nano-dollars: every amount flag (--usd, --balance, --quota, --budget)
 * goes through here, so each refusal reads the same way whatever the flag.
 */
export function usdFlag(name: string, text: string, opts: { positive?: boolean } = {}): number {
  const refuse = (why: string) => new UsageError(`--${name}: '${text}' is not an amount this flag takes: ${why}`);
  if (/^\s*-/.test(text)) throw refuse("negative amounts are refused");
  let nano: number;
  try {
    nano = usdToNano(text);
  } catch (e) {
    throw refuse((e as Error).message.replace(/^not a USD amount \((.*)\): .*$/, "give $1").replace(/^\S+ has/, "it has"));
  }
  if (opts.positive && nano <= 0) throw refuse("it must be more than 0");
  return nano;
}

/** A whole number of at least `min` from a flag or word. */
export function wholeNumber(name: string, text: string, min = 1): number {
  const n = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n) || n < min) throw new UsageError(`${name} must be a whole number of at least ${min}, not '${text}'`);
  return n;
}

/**
 * The port given to a command: --port, else PORT (an empty PORT is unset, as an empty GATEWAY_DB
 * is); null when neither says. A refusal names where the text came from. `min` 0 lets serve take
 * any free port; a command that calls the server needs a real one.
 */
export function givenPort(flag: string | undefined, min: 0 | 1): number | null {
  const from = flag !== undefined ? "--port" : process.env.PORT ? "PORT" : null;
  if (from === null) return null;
  const text = from === "--port" ? flag! : process.env.PORT!;
  const port = Number(text);
  if (text.trim() === "" || !Number.isInteger(port) || port < min || port > 65535) throw new UsageError(`${from}: not a port number: ${text}`);
  return port;
}

const UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };

/** --since: an ISO 8601 time, or a duration back from now (30m, 24h, 7d, 2w). */
export function sinceFlag(text: string, now = Date.now()): number {
  const d = /^(\d+)([mhdw])$/.exec(text);
  if (d) return now - Number(d[1]) * UNITS[d[2]!]!;
  const read = readIsoTime(text);
  if ("why" in read) throw new UsageError(`--since: ${read.why}, nor a duration like 24h or 7d`);
  return read.ms;
}
