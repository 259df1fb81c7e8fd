/** A time kept as unix milliseconds, as the ISO 8601 text the JSON answers and the CLI show; null stays null. */
export function isoTime(ms: number): string;
export function isoTime(ms: number | null | undefined): string | null;
export function isoTime(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : new Date(ms).toISOString();
}

const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const leap = (y: number) => y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
/** Days in `month` (1-12) of `year`, by the proleptic Gregorian calendar Date uses (Date.UTC would read years 0-99 as 1900-1999). */
const daysIn = (year: number, month: number) => (month === 2 && leap(year) ? 29 : DAYS[month - 1]!);

/**
 * An ISO 8601 date or time as a person types it (`2099-01-01`, `2099-01-01T10:00:00+02:00`), as
 * unix milliseconds; otherwise why not. Date.parse alone rolls an impossible day over (2099-02-30
 * becomes 2 March, 2099-02-29 becomes 1 March), reads "1" or "next 2027" in some engines, and
 * takes words after the date ("2099-01-01 junk" is June): a date must start the text, be one the
 * calendar has, and be followed by nothing or by a time.
 */
export function readIsoTime(text: string): { ms: number } | { why: string } {
  const s = text.trim();
  const d = /^(\d{4})-(\d{2})-(\d{2})(?=$|[Tt ]\d)/.exec(s);
  if (!d) return { why: `not an ISO 8601 date or time (such as 2099-01-31 or 2099-01-31T08:00:00Z): ${text}` };
  const [year, month, day] = [Number(d[1]), Number(d[2]), Number(d[3])];
  if (month < 1 || month > 12) return { why: `${d[0]} is not a date: there is no month ${d[2]}` };
  const days = daysIn(year, month);
  if (day < 1 || day > days) return { why: `${d[0]} is not a date: ${MONTHS[month - 1]} ${year} has ${days} days` };
  const ms = Date.parse(s);
  if (!Number.isSafeInteger(ms)) return { why: `not an ISO 8601 date or time (such as 2099-01-31 or 2099-01-31T08:00:00Z): ${text}` };
  return { ms };
}

/** What tells the money path the time: budgets reset by it. One per ledger, so a test can move it (tests/ledger/budget.test.ts). */
export interface Clock {
  now: () => number;
}

export const systemClock = (): Clock => ({ now: () => Date.now() });
