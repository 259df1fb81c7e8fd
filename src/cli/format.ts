import { formatUsd, nanoToUsd } from "../core/money.ts";

/** Money for --json: a number of USD (up to 9 decimals), never a string. */
export const usd = (nano: number): number => nanoToUsd(nano);
export const usdOrNull = (nano: number | null): number | null => (nano === null ? null : nanoToUsd(nano));
export { isoTime as iso } from "../core/time.ts";

/** Text money for people and CSV: the exact decimal. */
export { formatUsd };
export { csv } from "../core/csv.ts";

/** Columns padded to their widest cell, for people. */
export function table(header: string[], rows: (string | number | null)[][]): string {
  const cells = [header, ...rows.map((r) => r.map((c) => (c === null || c === "" ? "-" : String(c))))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => r[i]!.length)));
  return cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join("  ")).join("\n");
}

/** One line of a request's cost: a class, its count, its price and what it came to (exact, before the one rounding). */
export interface CostLine {
  class: string;
  count: number;
  price_usd: string;
  unit: string;
  cost_usd: string;
}

/** Exact USD text of `micro` millionths of a nano-dollar (15 decimals at most, trailing zeros trimmed). */
export function microNanoUsd(micro: bigint): string {
  const whole = micro / 10n ** 15n;
  const frac = (micro % 10n ** 15n).toString().padStart(15, "0").replace(/0+$/, "");
  return frac ? `${whole}.${frac}` : `${whole}`;
}
