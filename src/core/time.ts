/** A time kept as unix milliseconds, as the ISO 8601 text the JSON answers and the CLI show; null stays null. */
export function isoTime(ms: number): string;
export function isoTime(ms: number | null | undefined): string | null;
export function isoTime(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : new Date(ms).toISOString();
}
