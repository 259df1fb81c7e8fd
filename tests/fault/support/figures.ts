import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

// The fault suites run in every `bun test`; GATEWAY_FAULTS=long runs their long variants.
// scripts/reliability.ts sets GATEWAY_FAULTS_OUT to a folder and reads back what each suite wrote there.

export const LONG = process.env.GATEWAY_FAULTS === "long";

/** `normal` in the default run, `long` with GATEWAY_FAULTS=long. */
export const scale = (normal: number, long: number): number => (LONG ? long : normal);

export interface SuiteFigures {
  suite: string;
  /** HTTP requests sent to the gateway. */
  requests: number;
  /** Faults of the suite's kind: fuzz inputs, client disconnects or SIGKILLs. */
  faults: number;
  /** Nano-dollars the books lost: |balance − SUM(ledger)| summed over accounts and checks, plus charges missing for answers delivered. */
  moneyLostNano: number;
  /** Holds still open when the suite checked. */
  holdsLeft: number;
  /** Anything else worth printing (status histogram, crashes survived, …). */
  extra?: Record<string, unknown>;
  long: boolean;
}

/** Writes the suite's figures where scripts/reliability.ts reads them; a no-op without GATEWAY_FAULTS_OUT. */
export function recordFigures(f: Omit<SuiteFigures, "long">): void {
  const dir = process.env.GATEWAY_FAULTS_OUT;
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${f.suite}.json`), JSON.stringify({ ...f, long: LONG }, null, 2));
}
