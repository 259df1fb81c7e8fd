import { parseArgs } from "node:util";

export class UsageError extends Error {}

export const COMMON_OPTIONS = {
  json: { type: "boolean" },
  config: { type: "string" },
  db: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

type Spec = Record<string, { type: "string" | "boolean"; short?: string }>;

/** Parses flags strictly: an unknown flag or a missing value is a one-line error, not a guess. */
export function parse<S extends Spec>(argv: string[], spec: S) {
  try {
    return parseArgs({ args: argv, options: { ...COMMON_OPTIONS, ...spec }, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError((e as Error).message.split("\n")[0]!);
  }
}

export function required(values: Record<string, unknown>, name: string): string {
  const v = values[name];
  if (typeof v !== "string" || v === "") throw new UsageError(`--${name} is required`);
  return v;
}
